import type { JsonValue } from '../json.js';
import type { DurableStore, JournalEntry, RunRecord } from './contract.js';
import type { MemoryRun } from './memory-runs.js';
import { checkReplacements, replaceStrings, type KeptSignalPayload } from './payload-rewrite.js';
import type { StreamChunk } from './stream.js';

/** A memory store's `signalPayloads` and `replacePayloads` (see `DurableStore`). */
export function memoryPayloads(
  runs: ReadonlyMap<string, MemoryRun>,
  logOf: (run: MemoryRun) => StreamChunk[],
): Required<Pick<DurableStore, 'signalPayloads' | 'replacePayloads'>> {
  return {
    async signalPayloads(runId): Promise<KeptSignalPayload[]> {
      // The memory store keeps every signal it accepted, decisions among them.
      const run = runs.get(runId);
      return (run?.signals ?? []).map(({ name, payload }) => ({
        name,
        payload: structuredClone(payload),
      }));
    },

    async replacePayloads(runId, incarnation, replacements) {
      checkReplacements(runId, replacements);
      const run = runs.get(runId);
      if (run === undefined || run.record.incarnation !== incarnation) return 0;
      const found = new Set<string>();
      const swap = <T>(value: T): T =>
        replaceStrings(value as unknown as JsonValue, replacements, found) as unknown as T;
      const { record } = run;
      const fields: Array<keyof RunRecord> = ['snapshot', 'output', 'error', 'wait'];
      for (const field of fields) {
        if (record[field] !== undefined) Object.assign(record, { [field]: swap(record[field]) });
      }
      run.journal = run.journal.map((entry) => swap<JournalEntry>(entry));
      run.signals = run.signals.map((signal) => swap(signal));
      const log = logOf(run);
      log.splice(0, log.length, ...log.map((chunk) => swap(chunk)));
      // The next checkpoint copies afresh instead of sharing parts of the copy kept for the last one.
      if (found.size > 0) run.saved = undefined;
      return found.size;
    },
  };
}
