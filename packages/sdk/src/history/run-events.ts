import type { JsonValue } from '../json.js';
import type { RunStatus } from '../store/contract.js';

/** How an effect (a model call, a tool call, a planner node's capability) ended, as a run's history says. */
export type EffectOutcomeStatus = 'ok' | 'error' | 'unknown';

/** Token usage the history keeps of a model call or a unit. */
export interface HistoryUsage {
  inputTokens: number;
  outputTokens: number;
}

/**
 * How an attempt that did not end the run or put it to wait stopped: `taken_over` from a holder that never gave
 * the run up (it crashed, or froze past its lease and lost it), `handed_over` (its worker shut down and released
 * it), or `suspended` (its store kept failing).
 */
export type AbandonedHow = 'taken_over' | 'handed_over' | 'suspended';

interface EventBase {
  /**
   * Where the event is in the run's history: rising, never reused, with gaps. A watcher resumes after the
   * last `seq` it saw (`client.watch(runId, { after })`).
   */
  seq: number;
  /** Milliseconds since the epoch, on the clock of the worker that recorded it. */
  at: number;
}

/**
 * One thing that happened to a run, durably: a run's history is a list of these, written with its checkpoints
 * (no write of its own), and `client.watch` streams them.
 */
export type RunEvent =
  | (EventBase & {
      type: 'attempt.started';
      /** The lease epoch this attempt holds the run under. */
      epoch: number;
      owner: string;
      /** The owner this attempt took the run from when that one never gave it up (a crash, a freeze). */
      takenFrom: string | null;
    })
  | (EventBase & {
      /**
       * Recorded by the attempt that took over: the attempt before it stopped without ending (crashed, lost
       * its lease, or was stopped), and what it did after `lastSeq` is lost; output it streamed is superseded.
       */
      type: 'attempt.abandoned';
      epoch: number;
      owner: string;
      /** The last event the abandoned attempt made durable. */
      lastSeq: number;
      how: AbandonedHow;
    })
  | (EventBase & {
      type: 'unit.started' | 'unit.settled';
      /** The trip (`trip-3`) or node (`node/fetch`) key. */
      unit: string;
      /** `trip 3`, `node fetch`. */
      label: string;
      /** On `unit.settled`: when it started and how long it took. */
      startedAt?: number;
      ms?: number;
      usage?: HistoryUsage;
    })
  | (EventBase & {
      type: 'effect.started' | 'effect.settled';
      effectId: string;
      /** The unit (trip or node) the effect belongs to, or null (a planner's planning call). */
      unit: string | null;
      /** What it is: `chat scripted`, `execute_tool book_flight`, `invoke_agent researcher`. */
      name: string;
      /** The effect's kind: `model`, `tool`, `plan`, `node`... */
      kind: string;
      /** On `effect.settled`: */
      outcome?: EffectOutcomeStatus;
      /** The error code of an `error` outcome, or why an outcome is unknown (`TOOL_TIMEOUT`). */
      code?: string;
      ms?: number;
      /** Bytes of the value or error it settled with, as JSON. */
      bytes?: number;
      usage?: HistoryUsage;
      /** A child run the effect ran (a planner node's agent). */
      childRunId?: string;
    })
  | (EventBase & { type: 'signals'; names: string[] })
  | (EventBase & { type: 'waiting'; until: number | null; signals: string[] })
  | (EventBase & {
      type: 'ended';
      status: RunStatus;
      /** The error code of a failed or cancelled run. */
      code?: string;
    })
  | (EventBase & {
      /**
       * The history kept of this run is bounded: events up to this `seq` were dropped (the oldest go first),
       * so a watcher that resumes from before it missed them.
       */
      type: 'history.truncated';
    });

/** The type of a `RunEvent`. */
export type RunEventType = RunEvent['type'];

/** Whether a value decoded from JSON is a string-keyed object. */
export function isJsonObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
