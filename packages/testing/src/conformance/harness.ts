import type { DurableStore } from '@cairn/sdk';

/**
 * One isolated backing store for one conformance test. Every `store()` call is a client of the same data,
 * as separate workers would be; a store may hand back one instance each time.
 */
export interface StoreHarness {
  /** A client of this test's data: a new worker, or the same instance again. */
  store(): DurableStore | Promise<DurableStore>;
  /** The lease length tests use when they mean a lease to run out. */
  shortTtlMs: number;
  /**
   * Makes every lease granted with `shortTtlMs` so far run out on the store's clock: advance a fake clock,
   * or wait past the ttl when the database's clock decides.
   */
  expireLeases(): Promise<void>;
  /**
   * Simulates the death of the process behind one store instance: its sessions end without any release
   * (Postgres: its lock connection closes). Stores without sessions need not provide it.
   */
  crash?(store: DurableStore): Promise<void>;
  /**
   * Cuts the liveness connection of one store instance as a network blip would, leaving the process alive: the
   * store opens another at its next keepalive and keeps its runs (Postgres: its lock connection's backend is
   * terminated). Stores without sessions need not provide it.
   */
  blip?(store: DurableStore): Promise<void>;
  /** Frees everything the harness opened; called after each test. */
  close?(): Promise<void>;
}

/** Creates a fresh, isolated harness for each test. */
export type StoreHarnessFactory = () => StoreHarness | Promise<StoreHarness>;

/** Options of `describeStoreConformance`. */
export interface StoreConformanceOptions {
  /** How many claimers race for one run. @defaultValue 8 */
  claimers?: number;
}
