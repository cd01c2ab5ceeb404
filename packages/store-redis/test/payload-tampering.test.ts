import { describePayloadTampering } from '@cairn/testing';
import { createRedisHarness, skippedBecause, sleep, unreachable } from './support.js';

// Encoded payloads moved or replaced in Redis (through store-redis's own writes) are refused.
const reason = await unreachable();

if (reason === undefined) {
  describePayloadTampering('redisStore: payloads moved or replaced', async () => {
    const harness = await createRedisHarness('tamper');
    const shortTtlMs = 200;
    return {
      store: () => harness.store(),
      shortTtlMs,
      expireLeases: () => sleep(shortTtlMs + 100),
      close: () => harness.close(),
    };
  });
} else {
  skippedBecause(reason);
}
