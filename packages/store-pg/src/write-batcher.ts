import { isCairnError } from '@cairn/sdk';

/**
 * What a batch statement says of one of its writes: a result, the error of that write alone, or a result to
 * come (the write goes on on its own, without holding up the writes queued behind the batch).
 */
export type WriteOutcome<Result> =
  { value: Result } | { error: unknown } | { later: Promise<Result> };

/** Options of `WriteBatcher`. */
export interface WriteBatcherOptions<Write> {
  /** Writes with the same key never share a statement and are sent in the order they came. */
  keyOf(write: Write): string;
  /** Writes in one statement, at most. @defaultValue 200 */
  maxBatch?: number;
}

interface Queued<Write, Result> {
  write: Write;
  resolve(result: Result): void;
  reject(error: unknown): void;
}

/**
 * Coalesces one kind of write from many runs into few statements, as graphile-worker batches job
 * completions: a write sent while no statement of its kind is in flight goes at once (a lone run pays no
 * delay), and the writes that arrive meanwhile go together in the next statement. A batch holds at most one
 * write per key (per run), and one run's trouble stays its own: the statement reports each write apart, and
 * when a statement fails as a whole for a reason a retry would not fix (one write's payload the database
 * refuses), its writes are sent again one by one, so only the bad one fails.
 */
export class WriteBatcher<Write, Result> {
  private queue: Array<Queued<Write, Result>> = [];
  private inFlight = false;
  private readonly maxBatch: number;

  constructor(
    /** Sends a batch; returns one outcome per write, in order. A throw is the whole statement's failure. */
    private readonly send: (writes: Write[]) => Promise<Array<WriteOutcome<Result>>>,
    private readonly options: WriteBatcherOptions<Write>,
  ) {
    this.maxBatch = options.maxBatch ?? 200;
  }

  submit(write: Write): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.queue.push({ write, resolve, reject });
      if (!this.inFlight) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.inFlight = true;
    try {
      let concurrent = false;
      while (this.queue.length > 0) {
        // Other runs are writing too (the last batch held more than one): let the replies already read this
        // turn move their runs to their next write, so it joins this batch instead of the next.
        if (concurrent) await new Promise((resolve) => setImmediate(resolve));
        const batch = this.takeBatch();
        concurrent = batch.length > 1;
        await this.sendBatch(batch);
      }
    } finally {
      this.inFlight = false;
    }
  }

  /** The next writes to send: the oldest of each key, up to `maxBatch`, the rest left in order. */
  private takeBatch(): Array<Queued<Write, Result>> {
    const batch: Array<Queued<Write, Result>> = [];
    const keys = new Set<string>();
    const rest: Array<Queued<Write, Result>> = [];
    for (const item of this.queue) {
      const key = this.options.keyOf(item.write);
      if (batch.length < this.maxBatch && !keys.has(key)) {
        keys.add(key);
        batch.push(item);
      } else {
        // A later write of a key already in the batch waits too, so a key's writes keep their order.
        keys.add(key);
        rest.push(item);
      }
    }
    this.queue = rest;
    return batch;
  }

  private async sendBatch(batch: Array<Queued<Write, Result>>): Promise<void> {
    let outcomes: Array<WriteOutcome<Result>>;
    try {
      outcomes = await this.send(batch.map((item) => item.write));
    } catch (error) {
      const retryable = isCairnError(error) && error.retryable;
      if (batch.length === 1 || retryable) {
        for (const item of batch) item.reject(error);
        return;
      }
      for (const item of batch) await this.sendBatch([item]);
      return;
    }
    batch.forEach((item, index) => {
      const outcome = outcomes[index]!;
      if ('error' in outcome) item.reject(outcome.error);
      else if ('later' in outcome) outcome.later.then(item.resolve, item.reject);
      else item.resolve(outcome.value);
    });
  }
}
