import type { Clock } from '../clock.js';
import { isCairnError, LeaseLostError, RunSuspendedError } from '../errors.js';
import type {
  Checkpoint,
  EffectOutcome,
  JournalEntry,
  SaveReceipt,
  SnapshotStore,
  StatusUpdate,
} from '../store/contract.js';
import type { StreamChunk, StreamStore } from '../store/stream.js';
import type { Attempt } from './attempt.js';

/**
 * How store writes that fail with a retryable error are tried again before the run is suspended: with
 * doubling backoff, until `maxElapsedMs` has passed since the write's first try or `maxAttempts` tries were
 * made, whichever comes first; never past the lease (a write past it would be refused anyway).
 */
export interface StoreRetryPolicy {
  /** Tries in all, the first included. @defaultValue unlimited: `maxElapsedMs` decides */
  maxAttempts: number;
  /** Wait before the second try; doubles each time. @defaultValue 100 */
  initialDelayMs: number;
  /** Longest wait between tries: how long a write may lag behind a store that came back. @defaultValue 1000 */
  maxDelayMs: number;
  /**
   * How long after its first try a write is still tried again: long enough to outlast a store failing over (a
   * Redis Cluster electing a replica: its node timeout plus about a second, 16 s with Redis's defaults; a
   * managed Postgres failover: 20–60 s). Bounded by the lease: a run whose lease runs out first loses it.
   * @defaultValue 30000
   */
  maxElapsedMs: number;
}

/** The store retry policy used when none is given. */
export const defaultStoreRetry: StoreRetryPolicy = {
  maxAttempts: Number.POSITIVE_INFINITY,
  initialDelayMs: 100,
  maxDelayMs: 1_000,
  maxElapsedMs: 30_000,
};

/** What the journal knows of one effect. */
export interface EffectMarks {
  started?: JournalEntry;
  settled?: Extract<JournalEntry, { type: 'settled' }>;
}

/** Doubling backoff, capped. */
export function backoffDelay(try_: number, initialDelayMs: number, maxDelayMs: number): number {
  return Math.min(maxDelayMs, initialDelayMs * 2 ** Math.max(0, try_ - 1));
}

/**
 * A call's last stream chunks (a model call's deltas, a tool call's outcome), handed over with its answer: they ride with the write that journals the
 * answer (a checkpoint or a journal append, on a store that takes them so; else appended just before it), never
 * after it. `landed` tells the stream they are written.
 */
export interface StreamTail {
  chunks: readonly StreamChunk[];
  landed(): void;
}

/**
 * Every write one attempt makes: journal marks (buffered, flushed before anything that must be durable
 * first), checkpoints and status changes. Writes are serialized, fenced by the attempt's epoch, retried
 * with backoff while the store's errors are retryable, and turned into `RunSuspendedError` when they keep
 * failing. A write never happens once the attempt has stopped.
 */
export class RunWriter {
  private readonly marks = new Map<string, EffectMarks>();
  private buffer: JournalEntry[] = [];
  private queue: Promise<unknown> = Promise.resolve();
  private seq: number;
  /** A write that failed for good: the run is being suspended, and no checkpoint may follow it. */
  private suspension: RunSuspendedError | undefined;
  /** A checkpoint or journal append of this attempt landed: the run went on (see `RunRecord.stalls`). */
  private landed = false;
  /** The status of the last checkpoint written. */
  private written: Checkpoint['status'] | undefined;
  /**
   * Stream tails of settled calls whose marks are not written yet: the next write carries them. A write takes a
   * copy: a tail added while it is on its way is not in it, and must not be told it landed.
   */
  private tails: StreamTail[] = [];

  constructor(
    private readonly store: SnapshotStore & Partial<StreamStore> & { streamsWithWrites?: boolean },
    private readonly attempt: Attempt,
    private readonly clock: Clock,
    private readonly retry: StoreRetryPolicy,
    journal: readonly JournalEntry[],
    lastSeq: number,
  ) {
    this.seq = lastSeq;
    for (const entry of journal) {
      this.index(entry);
      this.seq = Math.max(this.seq, entry.seq);
    }
  }

  /** The highest seq handed out so far; a checkpoint records it so seqs keep rising after it. */
  get lastSeq(): number {
    return this.seq;
  }

  /** Whether a checkpoint or journal append of this attempt landed. */
  get progressed(): boolean {
    return this.landed;
  }

  /** The status of the last checkpoint this attempt wrote, if any. */
  get lastWrittenStatus(): Checkpoint['status'] | undefined {
    return this.written;
  }

  /** Hands out the next seq without a journal mark: a history record's, ordered among the marks. */
  nextSeq(): number {
    return ++this.seq;
  }

  marksOf(effectId: string): EffectMarks {
    return this.marks.get(effectId) ?? {};
  }

  recordStarted(effectId: string): void {
    this.add({ seq: ++this.seq, type: 'started', effectId, at: this.clock.now() });
  }

  recordSettled(
    effectId: string,
    outcome: EffectOutcome,
    tail?: StreamTail,
  ): Extract<JournalEntry, { type: 'settled' }> {
    if (tail !== undefined && tail.chunks.length > 0) this.tails.push(tail);
    const entry = {
      seq: ++this.seq,
      type: 'settled' as const,
      effectId,
      at: this.clock.now(),
      outcome,
    };
    this.add(entry);
    return entry;
  }

  /**
   * Makes every buffered mark durable, in one append. The append is handed a copy: marks recorded while it
   * is on its way stay buffered for the next one.
   */
  flush(): Promise<void> {
    return this.serialized(async () => {
      if (this.buffer.length === 0) return;
      const entries = [...this.buffer];
      const ids = entries.map((entry) => `${entry.type}:${entry.effectId}`);
      await this.attempt.pass({ point: 'journal.before', runId: this.attempt.runId, entries: ids });
      const tails = [...this.tails];
      const riding = tails.length > 0 && this.store.streamsWithWrites === true;
      if (riding) {
        const chunks = chunksOf(tails);
        await this.withRetry(() => this.store.append(this.attempt.fence, entries, chunks));
        this.landedTails(tails);
      } else {
        await this.appendTails();
        await this.withRetry(() => this.store.append(this.attempt.fence, entries));
      }
      this.landed = true;
      this.dropThrough(entries.at(-1)!.seq);
      await this.attempt.pass({ point: 'journal.after', runId: this.attempt.runId, entries: ids });
    });
  }

  /** Whether marks are waiting for a flush. */
  get unwritten(): boolean {
    return this.buffer.length > 0;
  }

  /** The journal entries of these effects, in seq order: a checkpoint carries those of effects still pending. */
  entriesOf(effectIds: readonly string[]): JournalEntry[] {
    const entries: JournalEntry[] = [];
    for (const id of effectIds) {
      const marks = this.marks.get(id);
      if (marks?.started !== undefined) entries.push(marks.started);
      if (marks?.settled !== undefined) entries.push(marks.settled);
    }
    return entries.sort((a, b) => a.seq - b.seq);
  }

  /**
   * Writes a checkpoint; it supersedes the journal up to its `journalSeq`, buffered marks included. Marks
   * recorded after the snapshot was taken (while the checkpoint is on its way) stay buffered. The marks of
   * `keep` (effects still pending, whose entries the checkpoint carries) stay known. The store's receipt says
   * whether it was written (`unlessMail` may refuse it) and whether the mailbox holds signals.
   */
  checkpoint(checkpoint: Checkpoint, keep: readonly string[] = []): Promise<SaveReceipt> {
    return this.serialized(async () => {
      // Marks whose append failed may be results the step has not seen yet: a checkpoint now would move the run
      // on past them. The attempt stops instead; its last flush tries to write them once more.
      if (this.suspension !== undefined) throw this.suspension;
      const boundary = { runId: this.attempt.runId, status: checkpoint.status };
      await this.attempt.pass({ point: 'checkpoint.before', ...boundary });
      const tails = [...this.tails];
      const riding = tails.length > 0 && this.store.streamsWithWrites === true;
      if (!riding) await this.appendTails();
      const carried = riding ? { ...checkpoint, stream: chunksOf(tails) } : checkpoint;
      const receipt = await this.withRetry(() => this.store.save(this.attempt.fence, carried));
      if (!receipt.written) return receipt;
      if (riding) this.landedTails(tails);
      this.landed = true;
      this.written = checkpoint.status;
      this.dropThrough(checkpoint.journalSeq);
      const kept = new Set(keep);
      for (const [id, marks] of this.marks) {
        const latest = Math.max(marks.started?.seq ?? -Infinity, marks.settled?.seq ?? -Infinity);
        if (!kept.has(id) && latest <= checkpoint.journalSeq) this.marks.delete(id);
      }
      await this.attempt.pass({ point: 'checkpoint.after', ...boundary });
      return receipt;
    });
  }

  /** Changes the status, keeping checkpoint and journal. One try only: used while stopping. */
  updateStatus(update: StatusUpdate): Promise<void> {
    return this.serialized(() => this.store.updateStatus(this.attempt.fence, update));
  }

  /** Appends the stream tails waiting for a write, on their own: before a journal append that needs them first. */
  private async appendTails(): Promise<void> {
    const tails = [...this.tails];
    if (tails.length === 0 || this.store.appendStream === undefined) return;
    const chunks = chunksOf(tails);
    await this.withRetry(() => this.store.appendStream!(this.attempt.fence, chunks));
    this.landedTails(tails);
  }

  private landedTails(tails: readonly StreamTail[]): void {
    this.tails = this.tails.filter((tail) => !tails.includes(tail));
    for (const tail of tails) tail.landed();
  }

  /** Forgets buffered marks up to `seq`: a write made them durable. */
  private dropThrough(seq: number): void {
    this.buffer = this.buffer.filter((entry) => entry.seq > seq);
  }

  private add(entry: JournalEntry): void {
    this.index(entry);
    this.buffer.push(entry);
  }

  private index(entry: JournalEntry): void {
    const marks = this.marks.get(entry.effectId) ?? {};
    if (entry.type === 'started') marks.started = entry;
    else marks.settled = entry;
    this.marks.set(entry.effectId, marks);
  }

  private serialized<T>(write: () => Promise<T>): Promise<T> {
    const next = this.queue.then(() => {
      this.attempt.assertMayWrite();
      return write();
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async withRetry<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await retryStoreCall(write, this.attempt, this.clock, this.retry);
    } catch (error) {
      if (error instanceof RunSuspendedError) this.suspension ??= error;
      throw this.suspension ?? error;
    }
  }
}

/**
 * Makes one store call of an attempt, trying it again with backoff while the store's error is retryable, under
 * `policy` and never past the lease. A lost lease stops the attempt; a call that keeps failing throws
 * `RunSuspendedError`.
 */
export async function retryStoreCall<T>(
  call: () => Promise<T>,
  attempt: Attempt,
  clock: Clock,
  policy: StoreRetryPolicy,
): Promise<T> {
  const firstTry = clock.now();
  for (let try_ = 1; ; try_ += 1) {
    attempt.assertMayWrite();
    try {
      return await call();
    } catch (error) {
      if (error instanceof LeaseLostError) {
        attempt.loseLease(error);
        throw error;
      }
      // The run's subject was forgotten: nothing more may be written for it, now or after a retry.
      if (isCairnError(error) && error.code === 'SUBJECT_FORGOTTEN') throw error;
      const retryable = !isCairnError(error) || error.retryable;
      const delay = backoffDelay(try_, policy.initialDelayMs, policy.maxDelayMs);
      const elapsed = clock.now() + delay - firstTry;
      if (!retryable || try_ >= policy.maxAttempts || elapsed > policy.maxElapsedMs) {
        throw new RunSuspendedError(attempt.runId, error);
      }
      await attempt.sleep(clock, delay);
      // Past the lease no write can land: the attempt stops here, as a lost lease.
      attempt.checkLeaseTime(clock.now());
    }
  }
}

/**
 * The chunks of several tails, once each and in order: a tail holds every chunk of the tails before it not known
 * written yet, so tails taken while one write was on its way (tool calls settling together) overlap.
 */
function chunksOf(tails: readonly StreamTail[]): StreamChunk[] {
  if (tails.length === 1) return [...tails[0]!.chunks];
  const byPosition = new Map<number, StreamChunk>();
  for (const tail of tails) for (const chunk of tail.chunks) byPosition.set(chunk.position, chunk);
  return [...byPosition.values()].sort((a, b) => a.position - b.position);
}
