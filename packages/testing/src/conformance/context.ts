import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach } from 'vitest';
import type { Checkpoint, DurableStore, JournalEntry, NewRun } from '@cairn/sdk';
import type { StoreHarness, StoreHarnessFactory } from './harness.js';

/** A lease long enough never to run out during a test. */
export const longTtlMs = 60_000;

/** What every conformance test gets: this test's harness and a few builders. */
export interface ConformanceContext {
  harness(): StoreHarness;
  store(): Promise<DurableStore>;
}

/** Registers hooks that give each test a fresh harness and close it afterwards. */
export function useHarness(factory: StoreHarnessFactory): ConformanceContext {
  let current: StoreHarness | undefined;
  beforeEach(async () => {
    current = await factory();
  });
  afterEach(async () => {
    const harness = current;
    current = undefined;
    await harness?.close?.();
  });
  const harness = () => {
    if (current === undefined)
      throw new Error('No harness: the conformance context is used outside a test.');
    return current;
  };
  return { harness, store: async () => harness().store() };
}

/** A new run with a unique id. */
export function newRun(overrides: Partial<NewRun> = {}): NewRun {
  return {
    runId: `run-${randomUUID()}`,
    kind: 'agent',
    name: 'conformance',
    signature: 'sig-1',
    snapshot: { step: 0, messages: [{ role: 'user', content: 'hello' }] },
    ...overrides,
  };
}

/** A checkpoint carrying `step`, accounting for the journal up to `journalSeq` (0 unless given). */
export function checkpoint(step: number, overrides: Partial<Checkpoint> = {}): Checkpoint {
  return { status: 'running', signature: 'sig-1', snapshot: { step }, journalSeq: 0, ...overrides };
}

/** Journal entries with these seqs: `started` for odd, `settled` for even. */
export function entries(...seqs: number[]): JournalEntry[] {
  return seqs.map((seq) =>
    seq % 2 === 1
      ? { seq, type: 'started', effectId: `effect-${Math.ceil(seq / 2)}`, at: 1_000 + seq }
      : {
          seq,
          type: 'settled',
          effectId: `effect-${seq / 2}`,
          at: 1_000 + seq,
          outcome: { status: 'ok', value: { seq, nested: { snake_case_key: [1, 'two', null] } } },
        },
  );
}

/** Resolves when every promise settled; the values and reasons, in order. */
export async function settleAll<T>(
  promises: readonly Promise<T>[],
): Promise<PromiseSettledResult<T>[]> {
  return Promise.allSettled(promises);
}
