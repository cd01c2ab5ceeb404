import { randomBytes } from 'node:crypto';
import { aesGcmCodec, deflateCodec, protectPayloads, type DurableStore } from '@cairn/sdk';
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

// The store contract holds with every payload encoded (deflate, then AES-GCM): store-redis's scripts read
// nothing they need out of a payload.
const reason = await unreachable();

if (reason === undefined) {
  describeStoreConformance(`redisStore behind protectPayloads (${redisUrl})`, async () => {
    const harness = await createRedisHarness('protected');
    const codec = [deflateCodec(), aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' })];
    const shortTtlMs = 200;
    const raw = new Map<DurableStore, RedisStore>();
    return {
      store: async () => {
        const store = await harness.store();
        const protectedStore = protectPayloads(store, { codec });
        raw.set(protectedStore, store);
        return protectedStore;
      },
      shortTtlMs,
      expireLeases: () => sleep(shortTtlMs + 100),
      crash: (store) => raw.get(store)!.close(),
      blip: (store) => lapseLiveness(harness.admin, harness.prefix, raw.get(store)!.instance),
      close: () => harness.close(),
    };
  });
} else {
  skippedBecause(reason);
}
