import type { SerializedError } from '../errors.js';
import type { ForgetOptions, ForgetReport, ForgetTarget } from './forget-types.js';
import type { KeptSignalPayload } from './payload-rewrite.js';
import type { ReencryptOptions, ReencryptReport } from './reencrypt-types.js';
import type { JsonValue } from '../json.js';
import type { StreamChunk, StreamStore } from './stream.js';
import type { NewSignal, RunSignal, RunWait, SignalReceipt } from './waits.js';

/**
 * Where a run is in its life. `queued` (started by a client, not yet claimed), `running` and `suspended`
 * runs can be resumed; a `waiting` run holds no lease until its wait is due (its time came, a signal it waits
 * for arrived, or a client asked to cancel it); `completed`, `failed`, `cancelled` and `dead_lettered` (its
 * holders kept crashing) are final.
 */
export type RunStatus =
  | 'queued'
  | 'running'
  | 'waiting'
  | 'completed'
  | 'failed'
  | 'cancelled'
  | 'suspended'
  | 'dead_lettered';

/** The statuses a run never leaves. */
export const terminalStatuses: readonly RunStatus[] = [
  'completed',
  'failed',
  'cancelled',
  'dead_lettered',
];

/** The statuses a worker claims runs in; a `waiting` run is claimed too, once its wait is due. */
export const claimableStatuses: readonly RunStatus[] = ['queued', 'running', 'suspended'];

/** True when a run in this status is over and resuming it only returns its stored end. */
export function isTerminalStatus(status: RunStatus): boolean {
  return terminalStatuses.includes(status);
}

/**
 * What a fenced write names: the run, the incarnation of its id, and the lease epoch it was made under. A
 * store refuses the write unless all three are current; a child run's write must also find its root run at
 * the same incarnation and epoch, since the root's lease is what holds the child.
 */
export interface Fence {
  runId: string;
  /**
   * Which creation of `runId` this is: a run deleted and created again under the same id is another
   * incarnation, so a write made for the old one can never land on the new one, whatever its epoch.
   */
  incarnation: string;
  epoch: number;
  /** For a child run: the root run whose lease holds it (the child is written under the root's epoch). */
  root?: { runId: string; incarnation: string };
}

/** What a store keeps of a run: identity, definition signature, status, fencing epoch and last checkpoint. */
export interface RunRecord {
  runId: string;
  /** Which creation of this run id the record is (see `Fence.incarnation`). */
  incarnation: string;
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
  /** What a `waiting` run waits for; null in every other status. */
  wait: RunWait | null;
  /**
   * The lease holder, if any; with `leaseUntil`, tells whether a live worker holds the run. A child run is
   * held by its root run's lease: both fields are the root's.
   */
  owner: string | null;
  /** Milliseconds since the epoch, on the store's clock. */
  leaseUntil: number | null;
  /**
   * In `load` and `list`: the store knows the holder's liveness ended (its process died: store-pg's session lock
   * is free, store-redis's liveness lapsed), whatever `leaseUntil` says; another worker takes the run over once
   * the grace has passed. False while the holder is alive; absent when nobody holds the run or the store cannot
   * tell (lease-only liveness, a store without sessions).
   */
  holderGone?: boolean;
  /** Claims that took the run from a holder that never released it (a crash, a freeze). */
  recoveries: number;
  /**
   * Attempts in a row that ended in an error before the run could go on (a store that kept refusing its
   * checkpoint, an error the runtime could not get past): set by the status update that ends such an attempt,
   * reset by every checkpoint. Past `maxStalls` the run is dead-lettered.
   */
  stalls: number;
  /** A client asked to cancel the run; its holder cancels it at its next heartbeat. */
  cancelRequested: boolean;
  /** The run (at its incarnation) that started this one as a child run (a planner's agent node), or null. */
  parent: { runId: string; incarnation: string } | null;
  /** The top of the parent chain, whose lease holds this run, or null for a run that is not a child. */
  rootRunId: string | null;
  createdAt: number;
  updatedAt: number;
  /** Whose data the run holds (see `NewRun.subject`): set by a store behind `protectPayloads`. */
  subject?: string;
  /**
   * In a listing only: the run's stored rows cannot be read (changed behind the store's back), and why. Its
   * `snapshot` is then null, and loading or resuming it is `SNAPSHOT_INVALID`; the other runs are listed as usual.
   */
  unreadable?: string;
}

/** One mark in the journal: an effect started, or an effect settled with its outcome. */
export type JournalEntry =
  | { seq: number; type: 'started'; effectId: string; at: number }
  | { seq: number; type: 'settled'; effectId: string; at: number; outcome: EffectOutcome };

/**
 * How an effect ended: with a value, with an error, or unknown because it was in flight at a crash or was
 * abandoned past its timeout (then `error` says so: `TOOL_TIMEOUT`).
 */
export type EffectOutcome =
  | { status: 'ok'; value: JsonValue }
  | { status: 'error'; error: SerializedError }
  | { status: 'unknown'; error?: SerializedError };

/** A run as loaded: its record, the journal written since its last checkpoint, and its mailbox, in order. */
export interface StoredRun {
  run: RunRecord;
  journal: JournalEntry[];
  /** The signals no checkpoint has consumed yet, oldest first (`Checkpoint.signalsConsumed`). */
  signals: RunSignal[];
  /**
   * The `journalSeq` the stored checkpoint was saved with, as the store recorded it beside the snapshot; absent
   * before the first checkpoint. A snapshot that names another was changed behind the store's back.
   */
  checkpointSeq?: number;
}

/** What `create` needs to register a new run. */
export interface NewRun {
  runId: string;
  /**
   * `queued` for a run a worker should pick up; `waiting` (with `wait`) for one that starts later.
   * @defaultValue 'running'
   */
  status?: 'queued' | 'running' | 'waiting';
  /** With status `waiting`: when the run may start (a scheduled start). */
  wait?: RunWait;
  kind: string;
  name: string;
  signature: string;
  snapshot: JsonValue | null;
  /**
   * Whose data the run holds: a user or tenant id, given at start and inherited by child runs. A store behind
   * `protectPayloads` keeps it in plaintext beside the run's encoded snapshot, encodes the run's payloads under
   * that subject's own key when its codec has per-subject keys, and `forget({ subject })` finds the run by it.
   * A store without a codec does not keep it.
   */
  subject?: string;
  /**
   * For a child run: the parent run (at its incarnation) that starts it. The child is then claimed only by
   * adoption under its root's lease, and deleted with its parent. A child left by an earlier incarnation of
   * the same parent id is replaced.
   */
  parent?: { runId: string; incarnation: string };
}

/**
 * A fenced checkpoint: replaces the snapshot and status and supersedes the journal entries up to
 * `journalSeq`; entries after it (marks made while the checkpoint was on its way) are kept.
 */
export interface Checkpoint {
  status: RunStatus;
  signature: string;
  snapshot: JsonValue;
  output?: JsonValue;
  error?: SerializedError;
  /**
   * The highest journal seq the snapshot accounts for. A checkpoint older than the stored one (a statement
   * that arrived late) is refused with `LeaseLostError` and changes nothing.
   */
  journalSeq: number;
  /**
   * The holder gives the run up with this write (its final checkpoint), as `release` would, so a store may
   * spare the release its own round trip; `release` after it changes nothing. @defaultValue false
   */
  release?: boolean;
  /** With status `waiting` (and `release`): what the run waits for. */
  wait?: RunWait;
  /**
   * The highest mailbox seq the snapshot accounts for: signals up to it leave the mailbox with this write, so
   * a signal is consumed exactly when the state that acted on it is stored. Never lowers what is stored.
   */
  signalsConsumed?: number;
  /**
   * Write only if the mailbox holds no signal above the consumed cursor (the stored one or `signalsConsumed`,
   * whichever is higher), checked atomically with the write: otherwise write nothing and answer
   * `{ written: false, mail: true }`. The runtime sets it on the checkpoint that completes a run that takes
   * signals, so a signal accepted while that checkpoint is on its way is handed to the run, never left unread
   * in a run that ended. The fence is checked first: a fenced-out write is still `LeaseLostError`.
   * @defaultValue false
   */
  unlessMail?: boolean;
  /**
   * Stream chunks written with this checkpoint, in the same atomic write and only if it is written, as
   * `appendStream` would write them (the same checks; chunks at or below the run's highest position skipped).
   * Sent only to a store whose `streamsWithWrites` is true: the last chunks of a model call ride with the
   * write that journals its answer (this, or a journal append) instead of costing a write of their own.
   */
  stream?: readonly StreamChunk[];
}

/** What a store says of a checkpoint it accepted. */
export interface SaveReceipt {
  /** False only for a checkpoint with `unlessMail` refused because the mailbox holds unconsumed signals. */
  written: boolean;
  /**
   * The mailbox holds a signal above the consumed cursor as it stands after this write: the runtime reads the
   * mailbox only when a receipt says so, instead of at every checkpoint. A signal accepted while the write was
   * on its way may be missed (it is reported by the next receipt).
   */
  mail: boolean;
}

/**
 * A status change that keeps the checkpoint and journal. `waiting` only keeps a run that is stored waiting as it
 * is, with its wait (an attempt woken from the wait that wrote nothing gives it back so); any other status
 * clears the wait.
 */
export interface StatusUpdate {
  status: RunStatus;
  error?: SerializedError;
  /** Sets `RunRecord.stalls`; unchanged when absent. */
  stalls?: number;
}

/** Filters for `list`. */
export interface RunFilter {
  status?: RunStatus | readonly RunStatus[];
  kind?: string;
  name?: string;
  /** At most this many runs, oldest first. */
  limit?: number;
  /**
   * Only runs created after this run (in list order): how a long listing is read a page at a time, each page
   * after the last run of the one before. `RunNotFoundError` when no run has this id (it was deleted since).
   */
  after?: string;
}

/**
 * Durable storage of runs: records, checkpoints and the journal. Every write names a `Fence` (the lease it
 * was made under) and is rejected with `LeaseLostError` unless the run still has that incarnation and
 * epoch (and a child's root too), and unless the run is still open: a run in a final status never leaves
 * it. Each write is checked and applied on its own, even when a store sends many in one statement.
 * Failures a retry may fix are `CairnError`s with code `STORE_UNAVAILABLE` and `retryable: true`.
 */
export interface SnapshotStore {
  /**
   * Registers a run unless one with the same id exists; returns the stored record either way. Throws
   * `RunNotFoundError` when a child's parent (at that incarnation) does not exist.
   */
  create(run: NewRun): Promise<{ created: boolean; run: RunRecord }>;
  /** The run and its journal since the last checkpoint, or `undefined` for an unknown id. */
  load(runId: string): Promise<StoredRun | undefined>;
  /**
   * Writes a checkpoint and drops the journal entries it supersedes. Writing the final status the run
   * already has again (a retried write) succeeds and changes nothing. The checkpoint's values are the
   * runtime's own (it does not copy a snapshot it only hands over): a store serializes or copies what it
   * keeps before the returned promise settles. The runtime never changes a value it handed to a checkpoint
   * (it replaces a part of its state, never changes one in place), so a store may keep references to compare
   * the next checkpoint with (store-pg keeps a conversation's messages, to write only the new ones), but it
   * never changes them. A retried final write answers `{ written: true, mail: false }`. A written checkpoint
   * sets `stalls` to 0.
   */
  save(fence: Fence, checkpoint: Checkpoint): Promise<SaveReceipt>;
  /**
   * Appends journal entries, atomically and in order. Entries whose `seq` is not above the highest seq ever
   * appended to the run (kept across checkpoints) are skipped, so an append retried after an unknown outcome never
   * duplicates an entry. An append with an entry at or below the stored checkpoint's `journalSeq` is refused with
   * `LeaseLostError` and writes nothing: it was made from an older checkpoint than the one stored (or one whose
   * snapshot lied), and reporting its marks written would lose a write-ahead mark. `stream`: chunks written with
   * the entries, as a checkpoint's are (see `Checkpoint.stream`), sent only to a store whose `streamsWithWrites`
   * is true.
   */
  append(
    fence: Fence,
    entries: readonly JournalEntry[],
    stream?: readonly StreamChunk[],
  ): Promise<void>;
  /**
   * Changes only the status (and error, and stalls), keeping the snapshot and the journal: how a run is marked
   * suspended or cancelled without losing what its journal holds. `waiting` is refused with `INVALID_ARGUMENT`
   * unless the run is stored waiting (a wait starts with a checkpoint); it keeps that wait.
   */
  updateStatus(fence: Fence, update: StatusUpdate): Promise<void>;
  /** Runs matching the filter, oldest first. */
  list(filter?: RunFilter): Promise<RunRecord[]>;
  /**
   * Puts a signal in a run's mailbox, durably, whoever holds the run: it is delivered to the run's step
   * function by the checkpoint that consumes it, and wakes the run when it waits for that name. A signal with an
   * idempotency key the run's mailbox saw before (consumed or not) is not added again (`duplicate`). Throws
   * `RunNotFoundError` for an unknown run, `RUN_ENDED` for one in a final status, `INVALID_ARGUMENT` for a
   * child run (signal its root) or a signal `checkNewSignal` refuses.
   */
  signal(runId: string, signal: NewSignal): Promise<SignalReceipt>;
  /** The signals in a run's mailbox no checkpoint consumed yet, oldest first; empty for an unknown run. */
  mailbox(runId: string): Promise<RunSignal[]>;
  /**
   * Removes a run with its journal and its child runs; true when it existed. Refused with `LeaseHeldError`
   * while a live lease holds it (for a child, its root's), decided on the store's clock in the same step.
   */
  delete(runId: string): Promise<boolean>;
  /**
   * Flags a run that has not ended for cancellation by its holder; true when the flag was set. A child run is
   * cancelled with its root: false for a child.
   */
  requestCancel(runId: string): Promise<boolean>;
  /**
   * Deletes runs in the given statuses (the final ones by default) last updated before `olderThan`, with
   * their journals and child runs, so finished runs do not accumulate; never a held run, and never a child
   * run on its own (its root may still need it). Returns how many were deleted.
   */
  prune(options: PruneOptions): Promise<number>;
}

/** What `prune` deletes. */
export interface PruneOptions {
  olderThan: Date | number;
  /** @defaultValue the final statuses: completed, failed, cancelled and dead_lettered */
  status?: RunStatus | readonly RunStatus[];
}

/** Ownership of a run: who holds it, under which fence, until when. */
export interface Lease extends Fence {
  owner: string;
  /** Milliseconds since the epoch, on the store's clock. */
  leaseUntil: number;
  /** From `acquire`: the run's recoveries, this claim included when it took the run from a lost holder. */
  recoveries?: number;
  /** From `acquire` and `claim`: the owner this claim took the run from (one that never released it). */
  takenFrom?: string | null;
  /** From `acquire` and `renew`: a client asked to cancel the run. */
  cancelRequested?: boolean;
  /**
   * From `acquire` and `claim`, when the store read the run in the claim itself: the run as claimed, with its
   * journal, so the holder need not load it again.
   */
  claimed?: StoredRun;
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
  /**
   * The claimer's clock reading, which decides whether a waiting run's time has come (wait times are written
   * on the runtime's clock). @defaultValue the store's clock
   */
  now?: number;
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
   * Claims the run when nobody holds it, its lease ran out, or its holder is known to be gone. Returns
   * `undefined` when another live owner holds it, when it ended (a final status is never claimed), and for
   * a child run (only its root's holder adopts it). Throws `RunNotFoundError` for an unknown run.
   */
  acquire(runId: string, options: AcquireOptions): Promise<Lease | undefined>;
  /**
   * Extends a held lease; throws `LeaseLostError` when its epoch is no longer current. Only the store
   * instance that acquired a lease can be relied on to renew it (Postgres ties it to that session).
   */
  renew(lease: Lease, ttlMs: number): Promise<Lease>;
  /**
   * Gives the run up at once so another owner can claim it without waiting, and frees what the store keeps
   * for the claim (a lock, a session). A lost lease changes nothing in the store but is still freed locally:
   * call it after every claim, whatever ended it.
   */
  release(lease: Lease): Promise<void>;
  /**
   * Claims a child run for the holder of its parent's lease, while that lease is current: raises the child's
   * epoch to the parent's when it is not higher, and returns `undefined` otherwise (a newer parent holder
   * adopted it). The returned lease names the root in its fence, so a holder that lost the root's lease is
   * fenced out of the child's writes too. Throws `RunNotFoundError` for an unknown child, and
   * `INVALID_ARGUMENT` for a run that is not this parent incarnation's child.
   */
  adopt(childRunId: string, parent: Lease): Promise<Lease | undefined>;
  /**
   * Ids of runs a worker may claim now, oldest first: in a claimable status (a waiting run once its wait is
   * due or a cancel was asked), of one of the definitions, not a child run, and not held by a live owner. A
   * hint: `acquire` still decides.
   */
  claimable(options: ClaimableOptions): Promise<string[]>;
  /**
   * The earliest time (on the clock waits are written on) a waiting run of these definitions becomes due by
   * its time, or null when none waits for a time: how a worker sets a timer instead of polling for wake-ups.
   * With `after`, only times later than it count: runs already due are a claim's to find, and one a worker
   * left alone (parked after drift, say) must not hide the next sleeper from its timer.
   */
  nextWake(definitions: ClaimableOptions['definitions'], after?: number): Promise<number | null>;
  /**
   * Claims up to `limit` claimable runs at once, oldest first, each as `acquire` would, skipping runs another
   * claimer is taking at the same moment, and returns their leases (with `claimed` set). How workers claim
   * without racing each other for the same runs; a store without it is claimed run by run.
   */
  claim?(options: ClaimOptions): Promise<Lease[]>;
  /**
   * Readies what claiming needs (store-pg: its schema check and its liveness session), so that what can never
   * work is known before a worker claims anything: a configuration the store refuses throws a non-retryable
   * `CairnError` (a worker's `start()` then rejects with it), a store that is down a retryable one (the worker
   * starts and its claims try again). Optional: a store that needs nothing first has none.
   */
  prepare?(): Promise<void>;
}

/** What `claim` claims: up to `limit` runs of these definitions, for `owner`. */
export interface ClaimOptions extends ClaimableOptions {
  owner: string;
  ttlMs: number;
  /** Run ids not to claim now (a worker's runs parked after drift or a bad snapshot). */
  skip?: readonly string[];
}

/**
 * A store implementing both contracts, which is what a durable run needs. A store that can push may also
 * `subscribe`: the callback fires when runs may have become claimable (created, released), so workers
 * wake at once instead of waiting for their next poll. A store with a `StreamStore` keeps what runs say
 * while they run; without one, runs are watched checkpoint by checkpoint.
 */
export type DurableStore = SnapshotStore &
  LeaseStore &
  Partial<StreamStore> & {
    subscribe?(onWork: () => void): Promise<() => Promise<void>>;
    /** `save` and `append` write the stream chunks they are given with their own write (`Checkpoint.stream`). */
    readonly streamsWithWrites?: boolean;
    /**
     * Forgets a subject (its keys, then its runs) or one run: see `forget` in `protectPayloads`, the store that
     * has it.
     */
    forget?(target: ForgetTarget, options?: ForgetOptions): Promise<ForgetReport>;
    /**
     * Every signal payload the store keeps for a run, in no set order: its mailbox, the consumed signals it keeps
     * and the decisions that stand; empty for an unknown run. With `replacePayloads`, how `protectPayloads`
     * finds every payload of a run to move it to a new key.
     */
    signalPayloads?(runId: string): Promise<KeptSignalPayload[]>;
    /**
     * Moves every stored payload to the codec and key new payloads are written with, while runs go on: see
     * `reencrypt` in `protectPayloads`, the store that has it.
     */
    reencrypt?(options?: ReencryptOptions): Promise<ReencryptReport>;
    /**
     * In one atomic step, replaces each JSON string value equal to a key of `replacements` by its value
     * wherever the run, at this incarnation, keeps it: snapshot, output, error, wait, journal, signals (consumed
     * ones and standing decisions too) and stream. A string no longer stored (a holder wrote over it) is left
     * alone. Not fenced, so given only what leaves every payload saying the same (a payload encoded again under
     * a new key), it never undoes a holder's write. Returns how many keys were found; 0 for an unknown run or
     * another incarnation. `INVALID_ARGUMENT` for what `checkReplacements` refuses.
     */
    replacePayloads?(
      runId: string,
      incarnation: string,
      replacements: ReadonlyMap<string, string>,
    ): Promise<number>;
  };
