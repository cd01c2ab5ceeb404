import type { JsonObject, JsonValue } from './json.js';

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
  | 'OUTCOME_UNKNOWN';

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
function brand(errorClass: abstract new (...args: never[]) => Error, name: string): void {
  const symbol = Symbol.for(brandPrefix + name);
  Object.defineProperty(errorClass.prototype, symbol, { value: true });
  Object.defineProperty(errorClass, Symbol.hasInstance, {
    value: (instance: unknown) =>
      typeof instance === 'object' &&
      instance !== null &&
      (instance as Record<symbol, unknown>)[symbol] === true,
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

/** Turns any thrown value into its stored form; non-Cairn errors keep their name and message. */
export function serializeError(error: unknown): SerializedError {
  if (isCairnError(error)) {
    const serialized: SerializedError = {
      name: error.name,
      code: error.code,
      message: error.message,
      retryable: error.retryable,
      data: error.data,
    };
    if (error.cause !== undefined) serialized.cause = serializeError(error.cause);
    return serialized;
  }
  if (error instanceof Error) {
    const serialized: SerializedError = {
      name: error.name,
      code: 'UNKNOWN',
      message: error.message,
      retryable: false,
    };
    if (error.cause !== undefined) serialized.cause = serializeError(error.cause);
    return serialized;
  }
  return { name: 'Error', code: 'UNKNOWN', message: String(error), retryable: false };
}

const typedErrorPrototypes: Partial<Record<string, object>> = {
  RUN_NOT_FOUND: RunNotFoundError.prototype,
  AGENT_DRIFT: AgentDriftError.prototype,
  PLANNER_DRIFT: PlannerDriftError.prototype,
  NODE_FAILED: NodeFailedError.prototype,
  LEASE_LOST: LeaseLostError.prototype,
  LEASE_HELD: LeaseHeldError.prototype,
  RUN_SUSPENDED: RunSuspendedError.prototype,
  OUTPUT_INVALID: OutputValidationError.prototype,
};

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
  const prototype = typedErrorPrototypes[code];
  if (prototype !== undefined) {
    Object.setPrototypeOf(error, prototype);
    Object.assign(error, serialized.data);
  }
  return error;
}
