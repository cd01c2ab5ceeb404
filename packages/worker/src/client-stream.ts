import {
  CairnError,
  checkRunId,
  isCairnError,
  isTerminalStatus,
  isWaitDue,
  RunNotFoundError,
  type Clock,
  type DurableStore,
  type RunRecord,
  type StoredRun,
  type StreamChunk,
  type StreamStore,
} from '@cairn/sdk';
import { checkedCursor } from './client-watch.js';

/** Options of `client.stream`. */
export interface ClientStreamOptions {
  /** Only chunks after this position: the last one a reader saw, to resume. @defaultValue 0: from the first */
  after?: number;
  /** How often the store is read for new chunks while none come. @defaultValue 100 */
  pollMs?: number;
  /** Stops reading: the iterator ends without an error. */
  signal?: AbortSignal;
}

/** Reading what runs say while they run. */
export interface StreamReader {
  /**
   * The run's stream log from `after` on, as it is written, until the run ends or waits: each chunk once, in
   * position order, with no gap between what was stored and what comes live. Resume after a disconnect with
   * `after` set to the last position seen. A `superseded` chunk drops what its unit said before (`foldStream`).
   * Waits through a store that is down; throws `RunNotFoundError` for an unknown run, and `INVALID_ARGUMENT`
   * when the store keeps no streams.
   */
  stream(runId: string, options?: ClientStreamOptions): AsyncIterable<StreamChunk>;
}

/** How many chunks one read asks for. */
const pageSize = 1_000;

/** `stream` over a store, on the client's clock. */
export function streamReader(store: DurableStore, clock: Clock): StreamReader {
  const streams = (): Pick<StreamStore, 'readStream'> => {
    if (store.readStream === undefined) {
      throw new CairnError(
        'INVALID_ARGUMENT',
        'This store keeps no stream logs: runs on it cannot be streamed.',
      );
    }
    return { readStream: store.readStream.bind(store) };
  };
  const record = async (runId: string): Promise<RunRecord> => {
    const run = (await store.load(runId))?.run;
    if (run === undefined) throw new RunNotFoundError(runId);
    return run;
  };
  /** A store that is down is waited through (`null`): the run goes on meanwhile. */
  const orDown = async <T>(read: () => Promise<T>): Promise<T | null> => {
    try {
      return await read();
    } catch (error) {
      if (!(isCairnError(error) && error.retryable)) throw error;
      return null;
    }
  };

  return {
    async *stream(runId, options = {}) {
      checkRunId(runId);
      const { readStream } = streams();
      let cursor = checkedCursor(options.after);
      const pollMs = options.pollMs ?? 100;
      const read = async () => {
        const chunks = await readStream(runId, { after: cursor, limit: pageSize });
        // Positions follow each other from 1: anything past a gap is read again next time.
        const gap = chunks.findIndex((chunk, i) => chunk.position !== cursor + 1 + i);
        return gap === -1 ? chunks : chunks.slice(0, gap);
      };
      await record(runId);
      for (;;) {
        if (options.signal?.aborted) return;
        const chunks = await orDown(read);
        if (chunks !== null && chunks.length > 0) {
          for (const chunk of chunks) {
            cursor = chunk.position;
            yield chunk;
            if (options.signal?.aborted) return;
          }
          if (chunks.length === pageSize) continue;
        } else if (chunks !== null) {
          // Caught up: the run's status is read first, then the log once more, so whatever the run said
          // before it ended or began to wait is read before the stream ends.
          const loaded = await orDown(() => store.load(runId));
          // A run deleted once it ended (deleteOnComplete) has said all it will.
          if (loaded === undefined) return;
          if (loaded !== null && hasStopped(loaded, clock.now())) {
            for (;;) {
              const rest = await orDown(read);
              if (rest === null) break;
              for (const chunk of rest) {
                cursor = chunk.position;
                yield chunk;
                if (options.signal?.aborted) return;
              }
              if (rest.length < pageSize) return;
            }
          }
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

/**
 * Whether a run said all it will for now: it ended, or it waits and its wait is not due (a due wait, a steer or an
 * approval that came, is about to go on: its stream goes on too).
 */
function hasStopped({ run, signals }: StoredRun, now: number): boolean {
  if (isTerminalStatus(run.status)) return true;
  if (run.status !== 'waiting') return false;
  return !run.cancelRequested && (run.wait === null || !isWaitDue(run.wait, signals ?? [], now));
}
