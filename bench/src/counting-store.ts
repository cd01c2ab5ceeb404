import type { DurableStore } from '@cairn/sdk';

/** Calls per store method, and the JSON bytes handed to the writes that carry state. */
export interface StoreCounts {
  calls: Record<string, number>;
  /** Milliseconds spent waiting on each method, summed over its calls (concurrent calls overlap). */
  ms: Record<string, number>;
  /** Bytes of the checkpoint parameters (snapshot, output, error) passed to `save`. */
  saveBytes: number;
  /** Bytes of the journal entries passed to `append`. */
  appendBytes: number;
  /** Size of the last snapshot saved per run. */
  lastSnapshotBytes: Map<string, number>;
  /** Leases granted: runs returned by `claim`, plus successful `acquire`s. */
  leases: number;
}

/** Options of `countingStore`. */
export interface CountingOptions {
  /** Measure the JSON of each checkpoint and journal entry (a `JSON.stringify` each). @defaultValue true */
  bytes?: boolean;
}

/**
 * Wraps a store to count the calls the runtime makes per method, the leases it is granted and the bytes of
 * state it writes. The returned store is the wrapped one for every other purpose.
 */
export function countingStore(
  store: DurableStore,
  options: CountingOptions = {},
): { store: DurableStore; counts: StoreCounts } {
  const measureBytes = options.bytes ?? true;
  const counts: StoreCounts = {
    calls: {},
    ms: {},
    saveBytes: 0,
    appendBytes: 0,
    lastSnapshotBytes: new Map(),
    leases: 0,
  };
  const counted = new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string') return value;
      return (...args: unknown[]) => {
        counts.calls[property] = (counts.calls[property] ?? 0) + 1;
        if (measureBytes && property === 'save') {
          const [fence, checkpoint] = args as [{ runId: string }, Record<string, unknown>];
          const { runId } = fence;
          const snapshot = JSON.stringify(checkpoint.snapshot ?? null).length;
          counts.saveBytes +=
            snapshot +
            JSON.stringify(checkpoint.output ?? null).length +
            JSON.stringify(checkpoint.error ?? null).length;
          counts.lastSnapshotBytes.set(runId, snapshot);
        } else if (measureBytes && property === 'append') {
          counts.appendBytes += JSON.stringify(args[1]).length;
        }
        const started = performance.now();
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        const settle = (outcome: unknown) => {
          counts.ms[property] = (counts.ms[property] ?? 0) + performance.now() - started;
          if (property === 'claim' && Array.isArray(outcome)) counts.leases += outcome.length;
          else if (property === 'acquire' && outcome !== undefined) counts.leases += 1;
          return outcome;
        };
        if (result instanceof Promise) {
          return result.then(settle, (error: unknown) => {
            settle(undefined);
            throw error;
          });
        }
        return settle(result);
      };
    },
  });
  return { store: counted, counts };
}

/** Store calls per unit (trip) and the mean wait of one call, as `method x.yz (n.nn ms)`, sorted by name. */
export function callsPer(counts: StoreCounts, units: number): string {
  return Object.entries(counts.calls)
    .filter(([method]) => method !== 'subscribe')
    .sort(([a], [b]) => a.localeCompare(b))
    .map(
      ([method, n]) =>
        `${method} ${(n / units).toFixed(2)} (${((counts.ms[method] ?? 0) / n).toFixed(2)} ms)`,
    )
    .join(', ');
}
