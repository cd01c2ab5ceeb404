import { storableJson, type JsonObject, type JsonValue } from './json.js';

/**
 * Every code a Cairn error can carry. Codes are stable: once released they never change meaning.
 * The README lists them.
 */
export type CairnErrorCode =
  | 'INVALID_ARGUMENT'
  | 'RUN_NOT_FOUND'
  | 'STORE_REQUIRED'
  | 'AGENT_DRIFT'
  | 'PLANNER_DRIFT'
  | 'LEASE_LOST'
  | 'LEASE_HELD'
  | 'STORE_UNAVAILABLE'
  | 'STORE_FAILED'
  | 'SCHEMA_MISMATCH'
  | 'SNAPSHOT_INVALID'
  | 'RUN_SUSPENDED'
  | 'RUN_WAITING'
  | 'RUN_ENDED'
  | 'RUN_CANCELLED'
  | 'RUN_RELEASED'
  | 'RUN_DEAD_LETTERED'
  | 'RUN_FAILED'
  | 'RESULT_TIMEOUT'
  | 'OUTPUT_INVALID'
  | 'MAX_TRIPS_EXCEEDED'
  | 'MODEL_FAILED'
  | 'TOOL_NOT_FOUND'
  | 'TOOL_INPUT_INVALID'
  | 'TOOL_FAILED'
  | 'TOOL_TIMEOUT'
  | 'PLAN_INVALID'
  | 'NODE_FAILED'
  | 'REF_UNRESOLVED'
  | 'OUTCOME_UNKNOWN'
  | 'APPROVAL_TIMEOUT'
  | 'PAYLOAD_UNREADABLE'
  | 'SUBJECT_FORGOTTEN';

/** Options every Cairn error accepts. */
export interface CairnErrorOptions {
  /** Whether trying the same operation again may succeed. @defaultValue false */
  retryable?: boolean;
  cause?: unknown;
  /** JSON details kept when the error is stored. */
  data?: JsonObject;
}

const brandPrefix = '@cairn/sdk/error:';

/** Makes `instanceof` work across duplicate copies of this package by checking a global symbol. */
export function brand(errorClass: abstract new (...args: never[]) => Error, name: string): void {
  const symbol = Symbol.for(brandPrefix + name);
  Object.defineProperty(errorClass.prototype, symbol, { value: true });
  Object.defineProperty(errorClass, Symbol.hasInstance, {
    // A value whose properties cannot be read (a hostile `Proxy`) is not a Cairn error.
    value: (instance: unknown) => {
      try {
        return (
          typeof instance === 'object' &&
          instance !== null &&
          (instance as Record<symbol, unknown>)[symbol] === true
        );
      } catch {
        return false;
      }
    },
  });
}

/** The base of every error Cairn throws: a stable `code`, whether it is `retryable`, and JSON `data`. */
export class CairnError extends Error {
  readonly code: CairnErrorCode;
  readonly retryable: boolean;
  readonly data: JsonObject;

  constructor(code: CairnErrorCode, message: string, options: CairnErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CairnError';
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.data = options.data ?? {};
  }
}
brand(CairnError, 'CairnError');

/** True for any Cairn error, whichever copy of the package threw it. */
export function isCairnError(error: unknown): error is CairnError {
  return error instanceof CairnError;
}

/** A run id that no store knows: never created, or deleted. */
export class RunNotFoundError extends CairnError {
  readonly runId: string;
  constructor(runId: string) {
    super('RUN_NOT_FOUND', `No run with id "${runId}" exists in the store.`, { data: { runId } });
    this.name = 'RunNotFoundError';
    this.runId = runId;
  }
}
brand(RunNotFoundError, 'RunNotFoundError');

/** A stored snapshot was written by a different definition (see `signature`). */
export class DriftError extends CairnError {
  readonly runId: string;
  readonly stored: string;
  readonly current: string;
  constructor(
    code: 'AGENT_DRIFT' | 'PLANNER_DRIFT',
    kind: string,
    runId: string,
    stored: string,
    current: string,
  ) {
    super(
      code,
      `Run "${runId}" was checkpointed by a different ${kind} definition (signature ${stored}, now ${current}). ` +
        'Resume with { force: true } to continue under the new definition.',
      { data: { runId, stored, current } },
    );
    this.name = 'DriftError';
    this.runId = runId;
    this.stored = stored;
    this.current = current;
  }
}
brand(DriftError, 'DriftError');

/** An agent's checkpoint was written under another agent signature. */
export class AgentDriftError extends DriftError {
  constructor(runId: string, stored: string, current: string) {
    super('AGENT_DRIFT', 'agent', runId, stored, current);
    this.name = 'AgentDriftError';
  }
}
brand(AgentDriftError, 'AgentDriftError');

/** A planner's checkpoint was written under another planner signature. */
export class PlannerDriftError extends DriftError {
  constructor(runId: string, stored: string, current: string) {
    super('PLANNER_DRIFT', 'planner', runId, stored, current);
    this.name = 'PlannerDriftError';
  }
}
brand(PlannerDriftError, 'PlannerDriftError');

/** A planner node failed and the planner's replan budget was spent; its error is the `cause`. */
export class NodeFailedError extends CairnError {
  readonly nodeId: string;
  readonly capability: string;
  constructor(nodeId: string, capability: string, message: string, cause?: unknown) {
    super('NODE_FAILED', message, { cause, data: { nodeId, capability } });
    this.name = 'NodeFailedError';
    this.nodeId = nodeId;
    this.capability = capability;
  }
}
brand(NodeFailedError, 'NodeFailedError');

/** A write or renewal named an epoch that is no longer current: another holder claimed the run. */
export class LeaseLostError extends CairnError {
  readonly runId: string;
  readonly epoch: number;
  constructor(runId: string, epoch: number, detail = 'another holder claimed it') {
    super('LEASE_LOST', `Lease on run "${runId}" at epoch ${epoch} is lost: ${detail}.`, {
      data: { runId, epoch },
    });
    this.name = 'LeaseLostError';
    this.runId = runId;
    this.epoch = epoch;
  }
}
brand(LeaseLostError, 'LeaseLostError');

/** What `LeaseStore.adopt` throws for a run that is not the child of that parent incarnation. */
export function notAChildError(childRunId: string, parentRunId: string): CairnError {
  return new CairnError(
    'INVALID_ARGUMENT',
    `Run "${childRunId}" is not a child run of this incarnation of run "${parentRunId}".`,
    { data: { runId: childRunId, parentRunId } },
  );
}

/**
 * The error of a run whose stored checkpoint or journal is not what the runtime wrote (changed by hand, a bad
 * restore, a bug): `SNAPSHOT_INVALID`, for the runtime and for stores that read their rows back.
 */
export function snapshotInvalidError(runId: string, why: string): CairnError {
  return new CairnError(
    'SNAPSHOT_INVALID',
    `The stored snapshot of run "${runId}" is malformed: ${why}.`,
    { data: { runId } },
  );
}

/** The run is leased by another live owner, so it cannot be resumed here now. */
export class LeaseHeldError extends CairnError {
  readonly runId: string;
  constructor(runId: string) {
    super(
      'LEASE_HELD',
      `Run "${runId}" is held by another live owner; try again when its lease ends.`,
      {
        retryable: true,
        data: { runId },
      },
    );
    this.name = 'LeaseHeldError';
    this.runId = runId;
  }
}
brand(LeaseHeldError, 'LeaseHeldError');

/** The run kept failing to checkpoint; it stopped with its last good checkpoint kept and can be resumed. */
export class RunSuspendedError extends CairnError {
  readonly runId: string;
  constructor(runId: string, cause: unknown) {
    super(
      'RUN_SUSPENDED',
      `Run "${runId}" is suspended: its store kept failing. The last checkpoint is kept; resume it later.`,
      { cause, data: { runId } },
    );
    this.name = 'RunSuspendedError';
    this.runId = runId;
  }
}
brand(RunSuspendedError, 'RunSuspendedError');

/**
 * The run waits (for a time, a signal, an approval) and holds nothing meanwhile: `execute` and `resume` end with
 * it once the wait is stored, and `resume` after the wait is due continues the run. A worker takes it up again
 * by itself. `wait` says what it waits for.
 */
export class RunWaitingError extends CairnError {
  readonly runId: string;
  readonly wait: JsonValue;
  constructor(runId: string, wait: JsonValue) {
    super('RUN_WAITING', `Run "${runId}" is waiting; it continues once its wait is due.`, {
      data: { runId, wait },
    });
    this.name = 'RunWaitingError';
    this.runId = runId;
    this.wait = wait;
  }
}
brand(RunWaitingError, 'RunWaitingError');

/** What a store's `signal` throws for a run that already ended: nothing will read the signal. */
export function runEndedError(runId: string, status: string): CairnError {
  return new CairnError(
    'RUN_ENDED',
    `Run "${runId}" already ended ${status}: it takes no more signals.`,
    { data: { runId, status } },
  );
}

/** The model's final answer did not match the agent's `output` schema. */
export class OutputValidationError extends CairnError {
  constructor(message: string, issues: JsonValue) {
    super('OUTPUT_INVALID', `The model's output does not match the output schema: ${message}`, {
      data: { issues },
    });
    this.name = 'OutputValidationError';
  }
}
brand(OutputValidationError, 'OutputValidationError');

/** The JSON form of an error, the only form in which errors are stored. */
export interface SerializedError {
  name: string;
  code: string;
  message: string;
  retryable: boolean;
  data?: JsonObject;
  cause?: SerializedError;
}

/** Causes kept when an error is stored: a longer chain, or one that loops back on itself, is cut there. */
const maxStoredCauses = 8;

/**
 * Turns any thrown value into its stored form, plain JSON: non-Cairn errors keep their name and message,
 * anything else is described in the message. It never throws: a value whose properties cannot
 * be read (a throwing getter, a hostile `Proxy`), an object without a prototype, a cause chain that loops
 * back on itself, or a Cairn error whose `data` is not JSON (that data is dropped) are all stored.
 */
export function serializeError(error: unknown): SerializedError {
  const seen = new Set<unknown>();
  const top = serializeOne(error);
  let serialized = top;
  let current = error;
  for (let depth = 0; depth < maxStoredCauses; depth += 1) {
    seen.add(current);
    if (!attempt(() => isCairnError(current) || current instanceof Error, false)) break;
    const cause = read(current, 'cause');
    if (cause === undefined || seen.has(cause)) break;
    serialized = serialized.cause = serializeOne(cause);
    current = cause;
  }
  return top;
}

/** The message of any thrown value, readable whatever it is: what a model or a stored error is told. */
export function thrownMessage(error: unknown): string {
  if (!attempt(() => isCairnError(error) || error instanceof Error, false)) return describe(error);
  const message = read(error, 'message');
  return message === undefined ? '' : describe(message);
}

function serializeOne(error: unknown): SerializedError {
  if (attempt(() => isCairnError(error), false)) {
    const code = read(error, 'code');
    const data = attempt(() => storableJson(read(error, 'data')), undefined);
    return {
      name: nameOf(error, 'CairnError'),
      code: typeof code === 'string' ? code : 'UNKNOWN',
      message: thrownMessage(error),
      retryable: read(error, 'retryable') === true,
      data: isJsonObject(data) ? data : {},
    };
  }
  const name = attempt(() => error instanceof Error, false) ? nameOf(error, 'Error') : 'Error';
  return { name, code: 'UNKNOWN', message: thrownMessage(error), retryable: false };
}

function nameOf(error: unknown, fallback: string): string {
  const name = read(error, 'name');
  return typeof name === 'string' ? name : fallback;
}

/** A thrown value as text: a string as it is, else its `String`, else its JSON, else its kind. */
function describe(value: unknown): string {
  if (typeof value === 'string') return value;
  const text =
    attempt(() => String(value), undefined) ??
    attempt(() => JSON.stringify(value), undefined) ??
    attempt(() => Object.prototype.toString.call(value), undefined);
  return text ?? 'a thrown value that cannot be read';
}

function read(value: unknown, key: string): unknown {
  return attempt(() => (value as Record<string, unknown>)[key], undefined);
}

/** `fn()`, or `fallback` when it throws. */
function attempt<T, F>(fn: () => T, fallback: F): T | F {
  try {
    return fn();
  } catch {
    return fallback;
  }
}

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The classes that add typed fields, by code, with the fields they restore from `data`. */
const typedErrors = new Map<string, { prototype: object; fields: readonly string[] }>([
  ['RUN_NOT_FOUND', { prototype: RunNotFoundError.prototype, fields: ['runId'] }],
  ['AGENT_DRIFT', { prototype: AgentDriftError.prototype, fields: ['runId', 'stored', 'current'] }],
  [
    'PLANNER_DRIFT',
    { prototype: PlannerDriftError.prototype, fields: ['runId', 'stored', 'current'] },
  ],
  ['NODE_FAILED', { prototype: NodeFailedError.prototype, fields: ['nodeId', 'capability'] }],
  ['LEASE_LOST', { prototype: LeaseLostError.prototype, fields: ['runId', 'epoch'] }],
  ['LEASE_HELD', { prototype: LeaseHeldError.prototype, fields: ['runId'] }],
  ['RUN_SUSPENDED', { prototype: RunSuspendedError.prototype, fields: ['runId'] }],
  ['RUN_WAITING', { prototype: RunWaitingError.prototype, fields: ['runId', 'wait'] }],
  ['OUTPUT_INVALID', { prototype: OutputValidationError.prototype, fields: ['issues'] }],
]);

/**
 * Rebuilds a stored error with the same code, message, data and cause chain. Errors whose class adds typed
 * fields come back as that class (`instanceof AgentDriftError` holds) with the fields restored from `data`.
 */
export function deserializeError(serialized: SerializedError): CairnError {
  const code = serialized.code === 'UNKNOWN' ? 'RUN_FAILED' : (serialized.code as CairnErrorCode);
  const options: CairnErrorOptions = { retryable: serialized.retryable };
  if (serialized.data !== undefined) options.data = serialized.data;
  if (serialized.cause !== undefined) options.cause = deserializeError(serialized.cause);
  const error = new CairnError(code, serialized.message, options);
  error.name = serialized.name;
  const typed = typedErrors.get(code);
  if (typed !== undefined) {
    Object.setPrototypeOf(error, typed.prototype);
    // Only the class's own fields: stored data never overwrites `code`, `message` or the prototype.
    const data = serialized.data ?? {};
    for (const field of typed.fields) {
      if (Object.hasOwn(data, field)) (error as unknown as JsonObject)[field] = data[field]!;
    }
  }
  return error;
}
