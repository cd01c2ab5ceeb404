import type { RedisStore } from '@cairn/store-redis';
import { describeStoreConformance } from '@cairn/testing';
import {
  createRedisHarness,
  lapseLiveness,
  redisUrl,
  skippedBecause,
  sleep,
  unreachable,
} from './support.js';

const reason = await unreachable();

if (reason === undefined) {
  describeStoreConformance(`redisStore (${redisUrl})`, async () => {
    const harness = await createRedisHarness('conformance');
    const shortTtlMs = 200;
    return {
      store: () => harness.store(),
      shortTtlMs,
      // Redis's clock decides when a lease key expires: wait past it.
      expireLeases: () => sleep(shortTtlMs + 100),
      // A dead process renews no liveness; a closing store ends its own at once.
      crash: (store) => (store as RedisStore).close(),
      // Its liveness runs out now, as in a blip; the store renews it at its next tick.
      blip: (store) => lapseLiveness(harness.admin, harness.prefix, (store as RedisStore).instance),
      close: () => harness.close(),
    };
  });
} else {
  skippedBecause(reason);
}
