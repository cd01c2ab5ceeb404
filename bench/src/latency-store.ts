import type { Checkpoint, DurableStore, Fence } from '@cairn/sdk';

/** One sample per call that takes or gives up a lease, in milliseconds, as the caller waited for it. */
export interface LeaseLatencies {
  /** Each `claim` (and `acquire`) call. */
  claims: number[];
  /** Runs each of those calls returned. */
  claimed: number[];
  /** Each checkpoint that ends a run and gives its lease up with it (`save` with `release`). */
  finalSaves: number[];
  /** Each `release` of a lease such a checkpoint already gave up: nothing is left to send. */
  releasesAfterFinal: number[];
  /** Each other `release`: one that has a statement to send (shared with the releases in flight). */
  releases: number[];
}

const fenceKey = (fence: Fence) => `${fence.runId}@${fence.incarnation}#${fence.epoch}`;

/** Wraps a store to time every claim and release the runtime makes; every other call passes through. */
export function latencyStore(store: DurableStore): {
  store: DurableStore;
  latencies: LeaseLatencies;
} {
  const latencies: LeaseLatencies = {
    claims: [],
    claimed: [],
    finalSaves: [],
    releasesAfterFinal: [],
    releases: [],
  };
  /** Leases given up by a final checkpoint whose `release` has not come yet. */
  const givenUp = new Set<string>();
  const timed = async <T>(samples: number[], call: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await call();
    } finally {
      samples.push(performance.now() - started);
    }
  };
  const wrapped: Partial<DurableStore> = {
    claim: async (options) => {
      const leases = await timed(latencies.claims, () => store.claim!(options));
      latencies.claimed.push(leases.length);
      return leases;
    },
    acquire: async (runId, options) => {
      const lease = await timed(latencies.claims, () => store.acquire(runId, options));
      latencies.claimed.push(lease === undefined ? 0 : 1);
      return lease;
    },
    save: async (fence, checkpoint: Checkpoint) => {
      if (checkpoint.release !== true) return store.save(fence, checkpoint);
      const receipt = await timed(latencies.finalSaves, () => store.save(fence, checkpoint));
      // A write unlessMail held gave nothing up: a release after it is a real one.
      if (receipt.written) givenUp.add(fenceKey(fence));
      return receipt;
    },
    release: (lease) =>
      timed(
        givenUp.delete(fenceKey(lease)) ? latencies.releasesAfterFinal : latencies.releases,
        () => store.release(lease),
      ),
  };
  const proxy = new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'claim' && target.claim === undefined) return undefined;
      if (typeof property === 'string' && property in wrapped) {
        return wrapped[property as keyof DurableStore];
      }
      return Reflect.get(target, property, receiver);
    },
  });
  return { store: proxy, latencies };
}
