import { jsonClone } from '../json.js';
import type { Fence } from './contract.js';
import type { MemoryRun } from './memory-runs.js';
import {
  checkStreamChunks,
  streamChunksToKeep,
  streamReadAfter,
  streamReadLimit,
  type StreamChunk,
  type StreamStore,
} from './stream.js';

/**
 * The stream logs of a memory store's runs. Kept beside each run object, so a run deleted (and one created
 * again under its id) starts with no stream.
 */
export function memoryStreams(
  runs: ReadonlyMap<string, MemoryRun>,
  fence: (target: Fence) => MemoryRun,
): StreamStore & {
  /**
   * Checks chunks for a run (fenced already) and returns what writes them: a checkpoint that carries them checks
   * before it changes anything, and writes them with its own changes.
   */
  planAppend(run: MemoryRun, runId: string, chunks: readonly StreamChunk[]): () => void;
  /** The run's stream log, kept by reference: `replacePayloads` rewrites its chunks' parts in place. */
  logOf(run: MemoryRun): StreamChunk[];
} {
  const logs = new WeakMap<MemoryRun, StreamChunk[]>();
  const logOf = (run: MemoryRun | undefined): readonly StreamChunk[] =>
    (run === undefined ? undefined : logs.get(run)) ?? [];
  const planAppend = (run: MemoryRun, runId: string, chunks: readonly StreamChunk[]) => {
    checkStreamChunks(runId, chunks);
    const log = logs.get(run) ?? [];
    const kept = jsonClone(
      streamChunksToKeep(runId, log.at(-1)?.position ?? 0, chunks) as StreamChunk[],
    );
    return () => {
      log.push(...kept);
      logs.set(run, log);
    };
  };

  return {
    planAppend,
    logOf(run) {
      const log = logs.get(run) ?? [];
      logs.set(run, log);
      return log;
    },
    async appendStream(target, chunks) {
      checkStreamChunks(target.runId, chunks);
      planAppend(fence(target), target.runId, chunks)();
    },
    async readStream(runId, options) {
      const after = streamReadAfter(options);
      const limit = streamReadLimit(options);
      const log = logOf(runs.get(runId));
      // Positions are dense from 1: the chunk after `after` is at index `after`.
      return jsonClone(log.slice(after, after + limit));
    },
    async streamPosition(runId) {
      return logOf(runs.get(runId)).at(-1)?.position ?? 0;
    },
  };
}
