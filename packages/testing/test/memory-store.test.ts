import { memoryStore } from '@cairn/sdk';
import { createFakeClock, describeStoreConformance } from '@cairn/testing';

describeStoreConformance('memoryStore', () => {
  const clock = createFakeClock();
  const store = memoryStore({ clock });
  const shortTtlMs = 1_000;
  return {
    store: () => store,
    shortTtlMs,
    expireLeases: () => clock.advance(shortTtlMs + 1),
  };
});
