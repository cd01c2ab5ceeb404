import { CairnError, snapshotInvalidError } from '../errors.js';
import { parseStoredHistory, type StoredHistory } from '../history/stored-history.js';
import { storableJson, type JsonValue, type StorableViews } from '../json.js';
import type { JournalEntry } from '../store/contract.js';
import type { HistoryEnd, HistoryRecorder } from './history-recorder.js';
import type { RunWriter } from './run-writer.js';
import type { PerformCommand } from './step-function.js';
import { checkJournal } from './stored-journal.js';
import type { StoredTraceContext } from './tracing.js';

/** The runtime's checkpoint format: the step function's state and the effects it still waits for. */
export interface RuntimeSnapshot<State = JsonValue> {
  format: 1;
  state: State;
  /** Effects commanded and not yet settled at the checkpoint; `null` before the first step. */
  pending: PerformCommand[] | null;
  /** The last journal seq handed out when the checkpoint was taken. */
  journalSeq: number;
  /**
   * Journal entries of pending effects that were started or settled before the checkpoint and not yet
   * consumed: the checkpoint supersedes the journal, so it carries them.
   */
  carried?: JournalEntry[];
  /** The first attempt's run span, so a resumed attempt's span can link to the original trace. */
  trace?: StoredTraceContext;
  /** For a waiting run: when the wait began, on the runtime's clock (the start of its `cairn.wait` span). */
  waitingSince?: number;
  /** What happened to the run so far, bounded: attempts, units, effects, waits (`runEvents` reads it). */
  history?: StoredHistory;
}

/**
 * Keys of a runtime snapshot whose values are only read, never resumed from (the run's history): a store that
 * finds a part under them it cannot read or trust drops it (null) instead of refusing the run.
 */
export const advisorySnapshotKeys: readonly string[] = ['history'];

/**
 * The signature of a run started by name (a client without the definition): no definition has checkpointed it
 * yet, so there is nothing to drift from; its first checkpoint writes the definition's.
 */
export const unstartedSignature = '';

/**
 * The snapshot of a run started by kind and name, without its definition (`client.start({ kind, name }, input)`):
 * only the input. The first attempt, which has the definition, makes its initial state from it.
 */
export function unstartedRunSnapshot(input: JsonValue): JsonValue {
  return storableJson({ format: 1, start: { input }, pending: null, journalSeq: 0 });
}

/**
 * Checks a stored snapshot's shape and lets the definition validate its state; a run started by name (a
 * snapshot with `start` and no state yet) gets its initial state from `init`.
 */
export function parseRuntimeSnapshot<State>(
  runId: string,
  stored: JsonValue | null,
  parseState: (state: JsonValue) => State,
  init?: (input: JsonValue) => unknown,
): RuntimeSnapshot<State> {
  if (stored === null || typeof stored !== 'object' || Array.isArray(stored)) {
    throw snapshotInvalidError(runId, 'it is not an object');
  }
  if (stored.format !== 1)
    throw snapshotInvalidError(runId, `unknown format ${JSON.stringify(stored.format)}`);
  const { pending, journalSeq } = stored;
  if (typeof journalSeq !== 'number' || !Number.isSafeInteger(journalSeq) || journalSeq < 0)
    throw snapshotInvalidError(runId, 'journalSeq is not a whole number of at least 0');
  if (pending !== null && !Array.isArray(pending))
    throw snapshotInvalidError(runId, 'pending is not a list');
  for (const command of pending ?? []) {
    const ok =
      command !== null &&
      typeof command === 'object' &&
      !Array.isArray(command) &&
      command.type === 'perform' &&
      typeof command.id === 'string' &&
      typeof command.idempotent === 'boolean' &&
      typeof command.effect === 'object' &&
      command.effect !== null &&
      !Array.isArray(command.effect) &&
      typeof command.effect.kind === 'string';
    if (!ok) throw snapshotInvalidError(runId, 'a pending effect is malformed');
  }
  const pendingIds = new Set((pending ?? []).map((command) => (command as { id: string }).id));
  if (pendingIds.size !== (pending ?? []).length)
    throw snapshotInvalidError(runId, 'two pending effects share an id');
  let state: State;
  const start = stored.start;
  if (stored.state === undefined && init !== undefined && isObject(start) && 'input' in start) {
    // A run started by name meets its definition here: an input it cannot start from ends the run.
    state = checkedInitialState(runId, () => init(start.input ?? null) as State, parseState);
  } else {
    try {
      state = parseState(stored.state ?? null);
    } catch (error) {
      throw new CairnError(
        'SNAPSHOT_INVALID',
        `The stored state of run "${runId}" does not match its definition: ${String(error instanceof Error ? error.message : error)}`,
        { cause: error, data: { runId } },
      );
    }
  }
  const snapshot: RuntimeSnapshot<State> = {
    format: 1,
    state,
    pending: pending as unknown as PerformCommand[] | null,
    journalSeq,
  };
  if (stored.carried !== undefined) {
    if (!Array.isArray(stored.carried)) throw snapshotInvalidError(runId, 'carried is not a list');
    // What a checkpoint carries are the marks of its pending effects, made before it was taken.
    const carried = checkJournal(runId, stored.carried, 'carried');
    for (const entry of carried) {
      if (entry.seq > journalSeq)
        throw snapshotInvalidError(
          runId,
          `carried entry ${entry.seq} is after the checkpoint's journalSeq`,
        );
      if (!pendingIds.has(entry.effectId))
        throw snapshotInvalidError(
          runId,
          `carried entry ${entry.seq} is of an effect that is not pending`,
        );
    }
    snapshot.carried = carried;
  }
  const trace = stored.trace;
  if (
    trace !== null &&
    typeof trace === 'object' &&
    !Array.isArray(trace) &&
    typeof trace.traceId === 'string' &&
    typeof trace.spanId === 'string'
  ) {
    snapshot.trace = { traceId: trace.traceId, spanId: trace.spanId };
  }
  if (typeof stored.waitingSince === 'number' && Number.isFinite(stored.waitingSince)) {
    snapshot.waitingSince = stored.waitingSince;
  }
  const history = parseStoredHistory(stored.history, journalSeq);
  if (history !== undefined) snapshot.history = history;
  return snapshot;
}

/**
 * The state a definition starts a run from, checked as a stored one would be: an input it cannot start from
 * (a number where an agent takes a string, say, from untyped JavaScript) is `INVALID_ARGUMENT` with
 * `data.input: true`, before any store sees the run.
 */
export function checkedInitialState<State>(
  runId: string,
  init: () => State,
  parseState: (state: JsonValue) => State,
): State {
  try {
    return parseState(storableJson(init()) as JsonValue);
  } catch (error) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `The input of run "${runId}" is not one its definition starts from: ${String(error instanceof Error ? error.message : error)}`,
      { cause: error, data: { runId, input: true } },
    );
  }
}

/**
 * The checkpoint a run starts from: its initial state and nothing performed yet. Workers' clients use it to
 * enqueue a run that any process can then pick up.
 */
export function initialRunSnapshot<State, Input>(
  definition: { init(input: Input, runId: string): State; parseState?(state: JsonValue): State },
  input: Input,
  runId: string,
  trace?: StoredTraceContext,
): JsonValue {
  const init = () => definition.init(input, runId);
  const snapshot: RuntimeSnapshot<State> = {
    format: 1,
    state:
      definition.parseState === undefined
        ? init()
        : checkedInitialState(runId, init, definition.parseState),
    pending: null,
    journalSeq: 0,
    ...(trace === undefined ? {} : { trace }),
  };
  return storableJson(snapshot) as unknown as JsonValue;
}

function isObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The checkpoint's snapshot of `state` with its `pending` effects, and the journal seq it accounts for, taken
 * together right before it is written. History first: its records take seqs the snapshot's journalSeq must
 * account for; `last` (a wait or an end) is recorded in what is returned only.
 */
export function takeSnapshot<State>(taken: {
  state: State;
  pending: PerformCommand[];
  history: HistoryRecorder;
  writer: RunWriter;
  /** The attempt's storable views: what its last checkpoint held is not checked again. */
  views: StorableViews;
  trace: StoredTraceContext | undefined;
  last?: HistoryEnd | undefined;
  waitingSince?: number | undefined;
}): { snapshot: JsonValue; journalSeq: number } {
  const { state, pending, history, writer, views, trace, last, waitingSince } = taken;
  // A trip or node the run waits in (a call held for approval) goes on after the wait: it stays open.
  if (last === undefined || !('wait' in last)) history.unitsSettled(pending);
  const stored = history.stored(last);
  const carried = writer.entriesOf(pending.map((command) => command.id));
  const journalSeq = writer.lastSeq;
  const snapshot = views.view({
    format: 1,
    state,
    pending,
    journalSeq,
    ...(carried.length === 0 ? {} : { carried }),
    ...(trace === undefined ? {} : { trace }),
    ...(waitingSince === undefined ? {} : { waitingSince }),
    history: stored,
  }) as unknown as JsonValue;
  return { snapshot, journalSeq };
}
