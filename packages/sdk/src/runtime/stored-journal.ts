import { snapshotInvalidError as snapshotInvalid } from '../errors.js';
import type { JsonValue } from '../json.js';
import type { JournalEntry } from '../store/contract.js';
import type { DurableDefinition, PerformCommand } from './step-function.js';

type JsonRecord = { [key: string]: JsonValue };

function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Why a stored outcome is not one the runtime writes, or undefined. */
function outcomeProblem(outcome: unknown): string | undefined {
  if (!isRecord(outcome)) return 'has no outcome';
  switch (outcome.status) {
    case 'ok':
      return 'value' in outcome ? undefined : 'is ok without a value';
    case 'unknown':
      return undefined;
    case 'error': {
      const error = outcome.error;
      return isRecord(error) && typeof error.code === 'string' && typeof error.message === 'string'
        ? undefined
        : 'is an error without a code and a message';
    }
    default:
      return `has an outcome of unknown status ${JSON.stringify(outcome.status ?? null)}`;
  }
}

/**
 * Checks journal entries read back from a store (`where`: the journal, or a checkpoint's carried entries): each
 * a `started` or `settled` mark with a positive integer seq, an effect id, a time, and for `settled` an outcome
 * the runtime writes. Anything else is `SNAPSHOT_INVALID`: a corrupted row must stop the run before it runs
 * anything, not be read as something else.
 */
export function checkJournal(
  runId: string,
  entries: readonly unknown[],
  where: string,
): JournalEntry[] {
  entries.forEach((entry, index) => {
    const at = `${where} entry ${index}`;
    if (!isRecord(entry)) throw snapshotInvalid(runId, `${at} is not an object`);
    if (!Number.isSafeInteger(entry.seq) || (entry.seq as number) < 1)
      throw snapshotInvalid(runId, `${at} has no positive integer seq`);
    if (typeof entry.effectId !== 'string') throw snapshotInvalid(runId, `${at} names no effect`);
    if (typeof entry.at !== 'number' || !Number.isFinite(entry.at))
      throw snapshotInvalid(runId, `${at} has no time`);
    if (entry.type === 'started') return;
    if (entry.type !== 'settled')
      throw snapshotInvalid(
        runId,
        `${at} is of unknown type ${JSON.stringify(entry.type ?? null)}`,
      );
    const problem = outcomeProblem(entry.outcome);
    if (problem !== undefined) throw snapshotInvalid(runId, `${at} ${problem}`);
  });
  return entries as JournalEntry[];
}

/**
 * Checks what a resumed attempt is about to act on, before anything runs or is written: every pending effect
 * is one the definition commands, and every value the journal holds for one is one it answers. A settled
 * refund read back as something else must not be taken for "not run yet".
 */
export function checkStoredEffects<State>(
  definition: Pick<DurableDefinition<State, unknown, unknown>, 'checkStoredEffect'>,
  runId: string,
  state: State,
  pending: readonly PerformCommand[],
  journal: readonly JournalEntry[],
): void {
  const check = definition.checkStoredEffect;
  if (check === undefined) return;
  const settled = new Map<string, JsonValue>();
  for (const entry of journal) {
    if (entry.type === 'settled' && entry.outcome.status === 'ok')
      settled.set(entry.effectId, entry.outcome.value);
  }
  for (const command of pending) {
    const stored = settled.has(command.id) ? { value: settled.get(command.id)! } : undefined;
    const problem = check(command.effect, stored, state);
    if (problem !== undefined)
      throw snapshotInvalid(runId, `pending effect "${command.id}" ${problem}`);
  }
}
