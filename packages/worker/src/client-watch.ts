import {
  CairnError,
  checkRunId,
  isCairnError,
  isTerminalStatus,
  RunNotFoundError,
  runEvents,
  type Clock,
  type DurableStore,
  type RunEvent,
  type RunRecord,
} from '@cairn/sdk';

/** Options of `client.events`. */
export interface EventsOptions {
  /** Only events after this `seq` (a cursor a watcher kept). @defaultValue 0: all of them */
  after?: number;
}

/** Options of `client.watch`. */
export interface WatchOptions extends EventsOptions {
  /** How often the store is read for new events. @defaultValue 250 */
  pollMs?: number;
  /** Stops the watch: the iterator ends without an error. */
  signal?: AbortSignal;
}

/** Reading a run's history, once or as it grows. */
export interface EventReader {
  /**
   * The durable events of a run (attempts, trips and nodes, effects and their outcomes, waits, its end), oldest
   * first, from its last checkpoint. Throws `RunNotFoundError` for an unknown run.
   */
  events(runId: string, options?: EventsOptions): Promise<RunEvent[]>;
  /**
   * The run's events as they are written, until it ends: each one once, in `seq` order. Resume after a
   * disconnect with `after` set to the last `seq` seen, and nothing is missed or repeated. When a worker takes
   * the run over, `attempt.abandoned` comes first: what the earlier attempt showed after its `lastSeq` (a partial
   * answer) is superseded. Waits through a store that is down; throws `RunNotFoundError` for an unknown run or
   * one discarded while watched.
   */
  watch(runId: string, options?: WatchOptions): AsyncIterable<RunEvent>;
}

/** `events` and `watch` over a store, on the client's clock. */
export function eventReader(store: DurableStore, clock: Clock): EventReader {
  const read = async (runId: string): Promise<RunRecord> => {
    const record = (await store.load(runId))?.run;
    if (record === undefined) throw new RunNotFoundError(runId);
    return record;
  };
  return {
    async events(runId, options = {}) {
      checkRunId(runId);
      return withEnd(await read(runId), checkedCursor(options.after));
    },

    async *watch(runId, options = {}) {
      checkRunId(runId);
      let cursor = checkedCursor(options.after);
      const pollMs = options.pollMs ?? 250;
      for (;;) {
        if (options.signal?.aborted) return;
        let record: RunRecord | undefined;
        try {
          record = await read(runId);
        } catch (error) {
          // A store that is down (a restart, a failover) is waited through: the run goes on meanwhile.
          if (!(isCairnError(error) && error.retryable)) throw error;
        }
        if (record !== undefined) {
          for (const event of withEnd(record, cursor)) {
            cursor = event.seq;
            yield event;
            if (options.signal?.aborted) return;
          }
          if (isTerminalStatus(record.status)) return;
        }
        try {
          await clock.sleep(pollMs, options.signal);
        } catch {
          return;
        }
      }
    },
  };
}

/** A reader's cursor (`after`): a whole number from 0, else `INVALID_ARGUMENT`. */
export function checkedCursor(after: number | undefined): number {
  if (after === undefined) return 0;
  if (!Number.isSafeInteger(after) || after < 0) {
    throw new CairnError('INVALID_ARGUMENT', '`after` must be a whole number of at least 0.', {
      data: { after: String(after) },
    });
  }
  return after;
}

/**
 * The run's events after the cursor; a run that ended without its history saying so (a client cancelled it
 * while no worker held it, its holders kept crashing) gets its `ended` event here, one seq past its last
 * event, so that a watcher resuming from any cursor sees it exactly once.
 */
function withEnd(record: RunRecord, after: number): RunEvent[] {
  const all = runEvents(record);
  const events = all.filter((event) => event.seq > after);
  if (!isTerminalStatus(record.status) || all.some((event) => event.type === 'ended'))
    return events;
  const seq = Math.max(0, ...all.map((event) => event.seq)) + 1;
  if (seq <= after) return events;
  return [
    ...events,
    {
      seq,
      at: record.updatedAt,
      type: 'ended',
      status: record.status,
      ...(record.error === undefined ? {} : { code: record.error.code }),
    },
  ];
}
