import { describeStoreConformance } from '@cairn/testing';
import { createRedisHarness, redisUrl, skippedBecause, sleep, unreachable } from './support.js';

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
      close: () => harness.close(),
    };
  });
} else {
  skippedBecause(reason);
}
