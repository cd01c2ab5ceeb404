// What a store behind `protectPayloads` answers `forget` with (`DurableStore.forget`).

/** What `forget` forgets: everything of a subject (its keys, then its runs), or one run. */
export type ForgetTarget = { subject: string } | { runId: string };

/** Options of `forget`. */
export interface ForgetOptions {
  /**
   * How long to wait for the holders of live runs to stop (they stop at their next write or heartbeat) before
   * answering with the runs still held in `remaining`. @defaultValue 60000
   */
  timeoutMs?: number;
}

/** What `forget` did. */
export interface ForgetReport {
  /** The runs deleted (with their child runs). */
  deleted: string[];
  /** Runs whose holders had not stopped by the timeout: not deleted yet; `forget` again. */
  remaining: string[];
  /**
   * The subject's keys were deleted (a codec with per-subject keys, `aesGcmCodec({ subjects })`): its payloads
   * are unreadable wherever they were copied, backups included. False when no codec has per-subject keys: only
   * the rows were deleted.
   */
  keysDeleted: boolean;
}
