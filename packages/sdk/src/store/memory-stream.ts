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
): StreamStore {
  const logs = new WeakMap<MemoryRun, StreamChunk[]>();
  const logOf = (run: MemoryRun | undefined): readonly StreamChunk[] =>
    (run === undefined ? undefined : logs.get(run)) ?? [];

  return {
    async appendStream(target, chunks) {
      checkStreamChunks(target.runId, chunks);
      const run = fence(target);
      const log = logs.get(run) ?? [];
      const kept = streamChunksToKeep(target.runId, log.at(-1)?.position ?? 0, chunks);
      log.push(...jsonClone(kept as StreamChunk[]));
      logs.set(run, log);
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
