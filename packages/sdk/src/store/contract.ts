import type { SerializedError } from '../errors.js';
import type { JsonValue } from '../json.js';

/**
 * Where a run is in its life. `queued` (started by a client, not yet claimed), `running` and `suspended`
 * runs can be resumed; `completed`, `failed`, `cancelled` and `dead_lettered` (its holders kept crashing)
 * are final.
 */
export type RunStatus =
  'queued' | 'running' | 'completed' | 'failed' | 'cancelled' | 'suspended' | 'dead_lettered';

/** The statuses a run never leaves. */
export const terminalStatuses: readonly RunStatus[] = [
  'completed',
  'failed',
  'cancelled',
  'dead_lettered',
];

/** The statuses a worker claims runs in. */
export const claimableStatuses: readonly RunStatus[] = ['queued', 'running', 'suspended'];

/** True when a run in this status is over and resuming it only returns its stored end. */
export function isTerminalStatus(status: RunStatus): boolean {
  return terminalStatuses.includes(status);
}

/** What a store keeps of a run: identity, definition signature, status, fencing epoch and last checkpoint. */
export interface RunRecord {
  runId: string;
  /** The kind of step function: `agent`, `planner`, ... */
  kind: string;
  /** The definition's name. */
  name: string;
  /** The definition's signature when the last checkpoint was written. */
  signature: string;
  status: RunStatus;
  /** The fencing token of the current or last lease; 0 before the first claim. */
  epoch: number;
  /** The last checkpoint, as written by the runtime; null before the first one. */
  snapshot: JsonValue | null;
  /** The result of a completed run. */
  output?: JsonValue;
  /** Why a run failed, was cancelled or was suspended. */
  error?: SerializedError;
  /** The lease holder, if any; with `leaseUntil`, tells whether a live worker holds the run. */
  owner: string | null;
  /** Milliseconds since the epoch, on the store's clock. */
  leaseUntil: number | null;
  /** Claims that took the run from a holder that never released it (a crash, a freeze). */
  recoveries: number;
  /** A client asked to cancel the run; its holder cancels it at its next heartbeat. */
  cancelRequested: boolean;
  createdAt: number;
  updatedAt: number;
}

/** One mark in the journal: an effect started, or an effect settled with its outcome. */
export type JournalEntry =
  | { seq: number; type: 'started'; effectId: string; at: number }
  | { seq: number; type: 'settled'; effectId: string; at: number; outcome: EffectOutcome };

/** How an effect ended: with a value, with an error, or unknown because it was in flight at a crash. */
export type EffectOutcome =
  | { status: 'ok'; value: JsonValue }
  | { status: 'error'; error: SerializedError }
  | { status: 'unknown' };

/** A run as loaded: its record and the journal written since its last checkpoint, in order. */
export interface StoredRun {
  run: RunRecord;
  journal: JournalEntry[];
}

/** What `create` needs to register a new run. */
export interface NewRun {
  runId: string;
  /** `queued` for a run a worker should pick up. @defaultValue 'running' */
  status?: 'queued' | 'running';
  kind: string;
  name: string;
  signature: string;
  snapshot: JsonValue | null;
}

/** A fenced checkpoint: replaces the snapshot and status and supersedes the journal written before it. */
export interface Checkpoint {
  status: RunStatus;
  signature: string;
  snapshot: JsonValue;
  output?: JsonValue;
  error?: SerializedError;
}

/** A status change that keeps the checkpoint and journal. */
export interface StatusUpdate {
  status: RunStatus;
  error?: SerializedError;
}

/** Filters for `list`. */
export interface RunFilter {
  status?: RunStatus | readonly RunStatus[];
  kind?: string;
  name?: string;
  /** At most this many runs, oldest first. */
  limit?: number;
}

/**
 * Durable storage of runs: records, checkpoints and the journal. Every write names the lease epoch it was
 * made under and is rejected with `LeaseLostError` when that epoch is no longer the run's current epoch.
 * Failures a retry may fix are `CairnError`s with code `STORE_UNAVAILABLE` and `retryable: true`.
 */
export interface SnapshotStore {
  /** Registers a run unless one with the same id exists; returns the stored record either way. */
  create(run: NewRun): Promise<{ created: boolean; run: RunRecord }>;
  /** The run and its journal since the last checkpoint, or `undefined` for an unknown id. */
  load(runId: string): Promise<StoredRun | undefined>;
  /** Writes a checkpoint at `epoch` and drops the journal entries it supersedes. */
  save(runId: string, epoch: number, checkpoint: Checkpoint): Promise<void>;
  /**
   * Appends journal entries at `epoch`, atomically and in order. Entries whose `seq` is not above the
   * highest seq ever appended to the run (kept across checkpoints) are skipped, so an append retried after
   * an unknown outcome never duplicates an entry.
   */
  append(runId: string, epoch: number, entries: readonly JournalEntry[]): Promise<void>;
  /**
   * Changes only the status (and error) at `epoch`, keeping the snapshot and the journal: how a run is
   * marked suspended or cancelled without losing what its journal holds.
   */
  updateStatus(runId: string, epoch: number, update: StatusUpdate): Promise<void>;
  /** Runs matching the filter, oldest first. */
  list(filter?: RunFilter): Promise<RunRecord[]>;
  /** Removes a run and its journal; true when it existed. */
  delete(runId: string): Promise<boolean>;
  /** Flags a run that has not ended for cancellation by its holder; true when the flag was set. */
  requestCancel(runId: string): Promise<boolean>;
  /**
   * Deletes runs in the given statuses (the final ones by default) last updated before `olderThan`, with
   * their journals, so finished runs do not accumulate. Returns how many were deleted.
   */
  prune(options: PruneOptions): Promise<number>;
}

/** What `prune` deletes. */
export interface PruneOptions {
  olderThan: Date | number;
  /** @defaultValue completed, failed and cancelled */
  status?: RunStatus | readonly RunStatus[];
}

/** Ownership of a run: who holds it, under which fencing epoch, until when. */
export interface Lease {
  runId: string;
  owner: string;
  epoch: number;
  /** Milliseconds since the epoch, on the store's clock. */
  leaseUntil: number;
  /** From `acquire`: the run's recoveries, this claim included when it took the run from a lost holder. */
  recoveries?: number;
  /** From `acquire` and `renew`: a client asked to cancel the run. */
  cancelRequested?: boolean;
}

/** What a claimer asks for. */
export interface AcquireOptions {
  owner: string;
  ttlMs: number;
  /**
   * Also claim a run still leased to this same owner: a restarted process taking back what it held before
   * it died. Only safe when the owner names one live process. @defaultValue false
   */
  reclaimOwn?: boolean;
}

/** Which runs a worker can run. */
export interface ClaimableOptions {
  limit: number;
  /** The definitions the worker has, by kind and name. */
  definitions: ReadonlyArray<{ kind: string; name: string }>;
  /** Include runs still leased to this owner (see `AcquireOptions.reclaimOwn`). */
  reclaimOwner?: string;
}

/**
 * Claims on runs. `acquire` raises the epoch by one on every successful claim, so a holder that lost its
 * claim can be fenced out of every later write.
 */
export interface LeaseStore {
  /**
   * Claims the run when nobody holds it, its lease ran out, or its holder is known to be gone.
   * Returns `undefined` when another live owner holds it; throws `RunNotFoundError` for an unknown run.
   */
  acquire(runId: string, options: AcquireOptions): Promise<Lease | undefined>;
  /**
   * Extends a held lease; throws `LeaseLostError` when its epoch is no longer current. Only the store
   * instance that acquired a lease can be relied on to renew it (Postgres ties it to that session).
   */
  renew(lease: Lease, ttlMs: number): Promise<Lease>;
  /** Gives the run up at once so another owner can claim it without waiting; a lost lease is a no-op. */
  release(lease: Lease): Promise<void>;
  /**
   * Claims a child run for the holder of its parent's lease: raises the child's epoch to the parent's
   * epoch when it is not higher, and returns `undefined` otherwise (a newer parent holder adopted it).
   * The child then needs no heartbeat of its own, and a parent holder that lost its lease is fenced out
   * of the child's writes too. Throws `RunNotFoundError` for an unknown child.
   */
  adopt(childRunId: string, parent: Lease): Promise<Lease | undefined>;
  /**
   * Ids of runs a worker may claim now, oldest first: in a claimable status, of one of the definitions,
   * and not held by a live owner. A hint: `acquire` still decides.
   */
  claimable(options: ClaimableOptions): Promise<string[]>;
}

/**
 * A store implementing both contracts, which is what a durable run needs. A store that can push may also
 * `subscribe`: the callback fires when runs may have become claimable (created, released), so workers
 * wake at once instead of waiting for their next poll.
 */
export type DurableStore = SnapshotStore &
  LeaseStore & {
    subscribe?(onWork: () => void): Promise<() => Promise<void>>;
  };
