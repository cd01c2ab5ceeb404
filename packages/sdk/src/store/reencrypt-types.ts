// What a store behind `protectPayloads` answers `reencrypt` with (`DurableStore.reencrypt`).
import type { RunFilter } from './contract.js';

/** Options of `reencrypt` (`protectPayloads(...).reencrypt`). */
export interface ReencryptOptions {
  /** Only the runs this matches (`limit` and `after` aside). @defaultValue every run */
  filter?: Omit<RunFilter, 'limit' | 'after'>;
  /** Runs re-encoded at the same time. @defaultValue 8 */
  concurrency?: number;
  /** Runs listed at a time. @defaultValue 500 */
  pageSize?: number;
  /**
   * Only runs created before this time (ms since the epoch, as `RunRecord.createdAt`): a pass ends even while
   * runs keep being created. A run created later was written by a process already deployed, with the current key,
   * or is left to the next pass. @defaultValue a minute after the pass began (room for the store's clock)
   */
  createdBefore?: number;
  /** Called after each page, with the counts so far. */
  onProgress?(report: ReencryptReport): void;
  /** Stops after the page under way: the report says how far it got. */
  signal?: AbortSignal;
}

/** What `reencrypt` did. */
export interface ReencryptReport {
  /** Runs read. */
  runs: number;
  /** Runs with at least one payload moved to the current codec and key. */
  rewritten: number;
  /** Payloads moved. */
  payloads: number;
  /**
   * Payloads a holder wrote over while they were being moved: the holder wrote what replaced them with the
   * current key (a process with the new codec), or the next pass moves them.
   */
  raced: number;
  /** Runs whose payloads could not be read (a key not given, a row changed): left as they are, with why. */
  unreadable: Array<{ runId: string; reason: string }>;
  /** False when `signal` stopped it before the last run. */
  complete: boolean;
}
