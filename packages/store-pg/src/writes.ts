import {
  isTerminalStatus,
  LeaseLostError,
  type CairnError,
  type Checkpoint,
  type Fence,
  type JournalEntry,
  type NewRun,
  type RunRecord,
  type SaveReceipt,
  type StreamChunk,
} from '@cairn/sdk';
import type { Db } from './db.js';
import { toStoreError } from './errors.js';
import type { Names } from './names.js';
import { splitSnapshot, StoredItems } from './snapshot-items.js';
import { appendJournals, type JournalWrite } from './sql/append-journal.js';
import { appendOne } from './sql/append-one.js';
import { appendStreams, type StreamRow, type StreamWrite } from './sql/append-stream.js';
import { createRuns } from './sql/create-run.js';
import { saveCheckpoints, type CheckpointWrite, type SaveOutcome } from './sql/save-checkpoint.js';
import { saveOne } from './sql/save-one.js';
import { WriteBatcher, type WriteOutcome } from './write-batcher.js';

/**
 * The writes of many runs that share statements (and commits) when they arrive together: creations,
 * checkpoints, journal appends and stream appends. A write whose row another transaction holds is skipped by
 * the batch and sent again on its own, waiting for the row: it stalls nobody but itself.
 */
export class BatchedWrites {
  /** What this instance knows is stored of each run's long arrays, so a checkpoint sends only what is new. */
  readonly storedItems = new StoredItems();
  private readonly checkpoints: WriteBatcher<CheckpointWrite, SaveOutcome>;
  private readonly appends: WriteBatcher<JournalWrite, LeaseLostError | CairnError | undefined>;
  private readonly streams: WriteBatcher<StreamWrite, CairnError | undefined>;
  private readonly creations: WriteBatcher<NewRun, { created: boolean; run: RunRecord }>;

  constructor(
    private readonly sql: Db,
    private readonly names: Names,
  ) {
    this.checkpoints = new WriteBatcher(
      this.batch('save a checkpoint', (writes, wait) =>
        alone(writes)
          ? saveOne(sql, names, writes[0]!, wait).then((outcome) => [outcome])
          : saveCheckpoints(sql, names, writes, wait),
      ),
      { keyOf: (write) => write.fence.runId },
    );
    this.appends = new WriteBatcher(
      this.batch('append to the journal', (writes, wait) =>
        alone(writes)
          ? appendOne(sql, names, writes[0]!, wait).then((outcome) => [outcome])
          : appendJournals(sql, names, writes, wait),
      ),
      { keyOf: (write) => write.fence.runId },
    );
    this.streams = new WriteBatcher(
      this.batch('append to the stream', (writes, wait) => appendStreams(sql, names, writes, wait)),
      { keyOf: (write) => write.fence.runId },
    );
    this.creations = new WriteBatcher(
      async (runs) => {
        try {
          return (await createRuns(sql, names, runs)).map((outcome, i) =>
            'error' in outcome
              ? { error: toStoreError(outcome.error, 'create a run', names.schema, runs[i]!.runId) }
              : outcome,
          );
        } catch (error) {
          const runId = runs.length === 1 ? runs[0]!.runId : undefined;
          throw toStoreError(error, 'create a run', names.schema, runId);
        }
      },
      { keyOf: (run) => run.runId },
    );
  }

  create(run: NewRun): Promise<{ created: boolean; run: RunRecord }> {
    return this.creations.submit(run);
  }

  append(
    fence: Fence,
    entries: readonly JournalEntry[],
    stream?: readonly StreamChunk[],
  ): Promise<LeaseLostError | CairnError | undefined> {
    return this.appends.submit({ fence, entries, stream: streamRows(stream) });
  }

  /**
   * Stream chunks (already checked), serialized now: what the caller does to them after this call is not
   * written. Undefined once appended; else the gap error or why the fence refused it.
   */
  appendStream(fence: Fence, chunks: readonly StreamChunk[]): Promise<CairnError | undefined> {
    return this.streams.submit({ fence, chunks: streamRows(chunks) });
  }

  /**
   * A checkpoint that sends only the long arrays' new elements when this instance knows what is stored, and
   * everything when it does not (or someone else wrote since: the version tells). The receipt once saved,
   * when the run already had this final status (written, no mail) or when `unlessMail` held it (not written,
   * mail); else why it was refused.
   */
  async save(
    fence: Fence,
    checkpoint: Checkpoint,
  ): Promise<SaveReceipt | LeaseLostError | CairnError> {
    const { runId } = fence;
    const split = splitSnapshot(checkpoint.snapshot);
    let items = this.storedItems.plan(runId, split);
    const write = {
      fence,
      checkpoint,
      inline: split.inline,
      stream: streamRows(checkpoint.stream),
    };
    let outcome = await this.checkpoints.submit({ ...write, items });
    if (outcome.type === 'stale') {
      items = this.storedItems.plan(runId, split, true);
      outcome = await this.checkpoints.submit({ ...write, items });
    }
    // Nothing was written: what this instance knows is stored still is.
    if (outcome.type === 'held') return { written: false, mail: true };
    if (outcome.type !== 'saved') {
      this.storedItems.forget(runId);
      if (outcome.type === 'refused') return outcome.error;
      if (outcome.type === 'stale' || outcome.type === 'busy') {
        return new LeaseLostError(runId, fence.epoch, 'another writer raced it');
      }
      return { written: true, mail: false };
    }
    // A run given up is loaded again by whoever claims it next (this instance too), which records what is
    // stored then: keeping it here would only hold a waiting run's conversation in memory.
    if (isTerminalStatus(checkpoint.status) || checkpoint.release === true) {
      this.storedItems.forget(runId);
    } else this.storedItems.remember(runId, outcome.version, items.stored);
    return { written: true, mail: outcome.mail };
  }

  /**
   * One kind of batch statement: sent without waiting for locked rows, then the writes it skipped each on
   * their own, waiting. Its failure is a typed store error, so the batcher can tell a retryable one; a
   * statement of one write (how the batcher isolates a bad one) names its run.
   */
  private batch<W extends { fence: Fence }, R>(
    operation: string,
    send: (writes: W[], wait: boolean) => Promise<Array<R | 'busy'>>,
  ): (writes: W[]) => Promise<Array<WriteOutcome<R>>> {
    const names = this.names;
    const once = async (writes: W[], wait: boolean): Promise<Array<R | 'busy'>> => {
      try {
        return await send(writes, wait);
      } catch (error) {
        const runId = writes.length === 1 ? writes[0]!.fence.runId : undefined;
        throw toStoreError(error, operation, names.schema, runId);
      }
    };
    return async (writes) => {
      const results = await once(writes, false);
      return results.map((result, i): WriteOutcome<R> => {
        if (!isBusy(result)) return { value: result };
        // Sent again on its own, waiting for its row, while the batcher goes on with the next batch.
        return { later: once([writes[i]!], true).then(([alone]) => alone as R) };
      });
    };
  }
}

/**
 * Whether a batch is one root run's write, which goes by the lighter one-row statement. A child's write is
 * fenced by its root's row too, so it goes in a batch statement.
 */
function alone(writes: ReadonlyArray<{ fence: Fence }>): boolean {
  return writes.length === 1 && writes[0]!.fence.root === undefined;
}

function isBusy(result: unknown): result is 'busy' {
  return (
    result === 'busy' ||
    (typeof result === 'object' &&
      result !== null &&
      (result as { type?: unknown }).type === 'busy')
  );
}

/** Stream chunks as their rows store them: each part JSON text, serialized now. */
function streamRows(chunks: readonly StreamChunk[] = []): StreamRow[] {
  return chunks.map(({ position, unit, part, at }) => ({
    position,
    unit,
    part: JSON.stringify(part),
    at,
  }));
}
