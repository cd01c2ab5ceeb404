import { CairnError } from '../errors.js';
import { storableJson, type JsonValue } from '../json.js';
import type { StandingDecision } from './decisions.js';

/**
 * What a waiting run waits for: a time, signals, or both, whichever comes first. While it waits it holds no
 * lease: a worker claims it again once it is due (`isWaitDue`).
 */
export interface RunWait {
  /**
   * Wakes at this time: milliseconds since the epoch, on the clock of the runtime that wrote the wait (a
   * worker's `Clock`). `null`: no time limit.
   */
  until: number | null;
  /** Names of the signals that wake it. A signal of another name is kept in the mailbox for later. */
  signals: string[];
  /**
   * What a reader is told the run waits for, as its definition describes it (an agent's: the tool calls that
   * wait for approval, with their arguments and deadline).
   */
  detail?: JsonValue;
}

/** A signal as a client sends it (see `SnapshotStore.signal`). */
export interface NewSignal {
  /** What kind of message it is: a wait names the signals that wake it. */
  name: string;
  payload: JsonValue;
  /** A second signal to the same run with this key is accepted once: the first one is kept. */
  idempotencyKey?: string;
}

/** A signal in a run's mailbox. */
export interface RunSignal {
  /** Its place in the run's mailbox: 1, 2, ... in the order the store accepted them. */
  seq: number;
  name: string;
  payload: JsonValue;
  idempotencyKey: string | null;
  /** When the store accepted it: milliseconds since the epoch, on the store's clock. */
  at: number;
}

/** What `SnapshotStore.signal` answers. */
export interface SignalReceipt {
  seq: number;
  /** The idempotency key was seen before: this signal was not added, `seq` is the first one's. */
  duplicate: boolean;
  /**
   * For a decision (`cairn.approval`): the decision that stands for the call, the first one accepted (this one,
   * unless `duplicate`), with the hash of the arguments the call waited with.
   */
  decision?: StandingDecision;
}

/** The longest signal name, and idempotency key, a store accepts. */
export const maxSignalNameLength = 200;
/** The largest signal payload a store accepts, as JSON text. */
export const maxSignalPayloadBytes = 1_000_000;

/**
 * Refuses, with `INVALID_ARGUMENT`, a signal no store should keep: a name that is not a non-empty string of at
 * most `maxSignalNameLength` characters, an idempotency key likewise, or a payload that is not JSON or is
 * larger than `maxSignalPayloadBytes`. Returns the signal as a store keeps it (payload made storable JSON).
 */
export function checkNewSignal(signal: NewSignal): Required<Pick<NewSignal, 'name' | 'payload'>> & {
  idempotencyKey: string | null;
} {
  const text = (value: unknown, what: string): string => {
    if (
      typeof value !== 'string' ||
      value.length === 0 ||
      value.length > maxSignalNameLength ||
      value.includes('\u0000')
    ) {
      throw new CairnError(
        'INVALID_ARGUMENT',
        `A signal's ${what} must be a string of 1 to ${maxSignalNameLength} characters without NUL.`,
        { data: { reason: `${what} invalid` } },
      );
    }
    return value;
  };
  if (typeof signal !== 'object' || signal === null) {
    throw new CairnError('INVALID_ARGUMENT', 'A signal must be an object with a name.');
  }
  const name = text(signal.name, 'name');
  const idempotencyKey =
    signal.idempotencyKey === undefined ? null : text(signal.idempotencyKey, 'idempotency key');
  let payload: JsonValue;
  try {
    payload = storableJson(signal.payload ?? null) as JsonValue;
  } catch (error) {
    throw new CairnError('INVALID_ARGUMENT', `The payload of signal "${name}" is not JSON.`, {
      cause: error,
    });
  }
  const size = new TextEncoder().encode(JSON.stringify(payload)).length;
  if (size > maxSignalPayloadBytes) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `The payload of signal "${name}" is ${size} bytes of JSON, more than ${maxSignalPayloadBytes}.`,
      { data: { reason: 'payload too large', bytes: size } },
    );
  }
  return { name, payload, idempotencyKey };
}

/**
 * Whether a waiting run is due: its time came (`now` on the same clock as `wait.until`), or its mailbox holds a
 * signal of a name it waits for. Stores decide the same in their claim statements.
 */
export function isWaitDue(
  wait: RunWait,
  mailbox: readonly Pick<RunSignal, 'name'>[],
  now: number,
): boolean {
  if (wait.until !== null && wait.until <= now) return true;
  return mailbox.some((signal) => wait.signals.includes(signal.name));
}

/** Checks a wait a runtime asks a store to keep: a time that is a number or null, signal names as strings. */
export function checkRunWait(wait: RunWait): RunWait {
  const ok =
    typeof wait === 'object' &&
    wait !== null &&
    (wait.until === null || (typeof wait.until === 'number' && Number.isFinite(wait.until))) &&
    Array.isArray(wait.signals) &&
    wait.signals.every((name) => typeof name === 'string' && name.length > 0);
  if (!ok) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      'A wait must have `until` (a time in milliseconds, or null) and `signals` (a list of signal names).',
    );
  }
  if (wait.until === null && wait.signals.length === 0) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      'A wait with neither a time nor a signal would never end: give `until`, `signals`, or both.',
    );
  }
  return wait;
}
