import type { RunStatus } from '@cairn/sdk';

/** What a worker reports as it works; pass `onEvent` to log or trace it. */
export type WorkerEvent =
  | { type: 'started'; owner: string }
  | {
      type: 'claimed';
      runId: string;
      kind: string;
      name: string;
      epoch: number;
      /** The status the run had when claimed: `queued` for a new run. */
      status: RunStatus;
      /** The holder it was taken from, when that holder never released it (a crash or a freeze). */
      takenFrom: string | null;
      recoveries: number;
    }
  | { type: 'completed'; runId: string }
  /**
   * The run waits (for a time, a signal, an approval) holding nothing: this attempt ended and its slot is free.
   * `until` is when it wakes by itself (ms on the worker's clock), or null; `signals` are the names that wake it.
   */
  | { type: 'waiting'; runId: string; until: number | null; signals: string[] }
  | { type: 'failed'; runId: string; code: string; message: string }
  | { type: 'cancelled'; runId: string }
  | { type: 'handed_over'; runId: string }
  | { type: 'lease_lost'; runId: string; message: string }
  | { type: 'suspended'; runId: string; message: string }
  | { type: 'dead_lettered'; runId: string; message: string }
  /** The run was not performed here: another worker won it, or it cannot be run (drift, unknown definition). */
  | { type: 'skipped'; runId: string; code: string; message: string }
  /** The worker's own loop failed to reach the store; it retries. */
  | { type: 'error'; code: string; message: string }
  | { type: 'closing'; signal?: string }
  | { type: 'closed' };
