import { randomBytes } from 'node:crypto';
import { aesGcmCodec, deflateCodec, memoryStore, protectPayloads } from '@cairn/sdk';
import { createFakeClock, describeStoreConformance } from '@cairn/testing';

// The store contract holds through a payload codec: every payload is encoded on its way in and decoded on its
// way out, and nothing a store checks (fences, waits, decisions, streams) changes.
describeStoreConformance('memoryStore behind protectPayloads (deflate, AES-GCM)', () => {
  const clock = createFakeClock();
  const codec = [deflateCodec(), aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' })];
  const store = protectPayloads(memoryStore({ clock }), { codec });
  const shortTtlMs = 1_000;
  return {
    store: () => store,
    shortTtlMs,
    expireLeases: () => clock.advance(shortTtlMs + 1),
  };
});
