/**
 * Coalesces one kind of write from many runs into few statements, as graphile-worker batches job
 * completions: a write sent while no statement of its kind is in flight goes at once (a lone run pays no
 * delay), and the writes that arrive meanwhile go together in the next statement. Each run has at most one
 * write in flight (its runtime serializes them), so a batch never holds two writes of one run.
 */
export class WriteBatcher<Write, Result> {
  private queue: Array<{
    write: Write;
    resolve(result: Result): void;
    reject(error: unknown): void;
  }> = [];
  private inFlight = 0;

  constructor(
    /** Sends a batch; returns one result per write, in order. A throw fails every write of the batch. */
    private readonly send: (writes: Write[]) => Promise<Result[]>,
    private readonly maxBatch = 200,
    private readonly maxInFlight = 1,
  ) {}

  submit(write: Write): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.queue.push({ write, resolve, reject });
      if (this.inFlight < this.maxInFlight) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.inFlight += 1;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        try {
          const results = await this.send(batch.map((item) => item.write));
          batch.forEach((item, index) => item.resolve(results[index]!));
        } catch (error) {
          for (const item of batch) item.reject(error);
        }
      }
    } finally {
      this.inFlight -= 1;
    }
  }
}
