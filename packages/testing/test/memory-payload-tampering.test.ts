import { memoryStore } from '@cairn/sdk';
import { createFakeClock, describePayloadTampering } from '@cairn/testing';

describePayloadTampering('memoryStore: payloads moved or replaced', () => {
  const clock = createFakeClock();
  const store = memoryStore({ clock });
  const shortTtlMs = 1_000;
  return { store: () => store, shortTtlMs, expireLeases: () => clock.advance(shortTtlMs + 1) };
});
