import { z } from 'zod';
import { CairnError, isCairnError, thrownMessage } from './errors.js';
import { storableJson, type JsonObject, type JsonValue } from './json.js';
import type { ToolSpec } from './model.js';
import { redactFields } from './redact.js';
import type { PerformCommand, RetryPolicy } from './runtime/step-function.js';

/** What a tool's `execute` receives besides its arguments. */
export interface ToolContext {
  runId: string;
  /**
   * The call's id in the conversation: the model's, unless an earlier call of the same answer had it or it was
   * empty; then one derived from it that no other call of the run has (`<id>_<index>`, `call-<trip>-<index>`).
   */
  toolCallId: string;
  /** `${runId}:${toolCallId}`: pass it to the systems the tool calls so a repeat can be recognised. */
  idempotencyKey: string;
  /** Aborts when the call runs past its `timeoutMs`, or when the run is cancelled or its lease is lost. */
  signal: AbortSignal;
}

/**
 * The timeout of a tool that sets none. An HTTP call or an email send takes seconds, and the gateways in front
 * of such services commonly give up on a request at 30 s: a call still running at 60 s has hung, not slowed.
 */
export const defaultToolTimeoutMs = 60_000;

/** The longest timeout a timer can hold (2^31 - 1 ms, about 24.8 days). */
const maxTimeoutMs = 2_147_483_647;

/** What `defineTool` takes. */
export interface ToolConfig<Schema extends z.ZodType, Result, Name extends string = string> {
  /** Letters, digits, `_` and `-`, at most 64: what providers accept. */
  name: Name;
  description: string;
  input: Schema;
  execute(args: z.output<Schema>, context: ToolContext): Promise<Result> | Result;
  /**
   * Running it twice has the effect of running it once. A call in flight at a crash is then run again on
   * resume instead of being reported to the model as outcome unknown. @defaultValue false
   */
  idempotent?: boolean;
  /**
   * Retries of `retryable` errors the tool throws, and of its timeouts when it is idempotent.
   * @defaultValue one try
   */
  retry?: RetryPolicy;
  /**
   * How long one try may run, in milliseconds (a positive integer, at most 2^31 - 1). Past it the call is
   * abandoned: its `signal` aborts, and whatever it returns later is dropped. A non-idempotent tool's call is
   * then answered as outcome unknown (as after a crash) and never tried again; an idempotent tool's call is
   * tried again under `retry`, and fails with `TOOL_TIMEOUT` once its tries are spent.
   * @defaultValue 60000
   */
  timeoutMs?: number;
  /**
   * Fields of the result no one should keep (a card number, a token): their names or dotted paths, masked as
   * `'[redacted]'` wherever they are (`redactFields`), or a function from the result to what the run keeps. The
   * run only ever sees the redacted result: it is what is journaled, put in the conversation and the run's history,
   * streamed, and shown to the model, so nothing of the rest is ever written, and a run resumed after a crash sees
   * what it saw. The arguments, the model's own words, are not redacted (encrypt them: `protectPayloads`).
   */
  redact?: readonly string[] | ((result: Result) => unknown);
}

/** A tool an agent can call. Its result must be JSON. `Name` is its name as a literal type, when known. */
export interface Tool<Args = unknown, Result = unknown, Name extends string = string> {
  readonly name: Name;
  readonly description: string;
  readonly input: z.ZodType<Args>;
  readonly idempotent: boolean;
  readonly retry: RetryPolicy | undefined;
  /** See `ToolConfig.timeoutMs`; a tool built without `defineTool` that sets none gets the default. */
  readonly timeoutMs?: number;
  execute(args: Args, context: ToolContext): Promise<Result> | Result;
}

/** Any tool, whatever its argument and result types. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTool = Tool<any, any>;

/** The arguments a tool's `execute` receives (its input schema's output). */
export type ToolArgs<T> = T extends Tool<infer Args, unknown, string> ? Args : never;

const toolName = /^[A-Za-z0-9_-]{1,64}$/;

/** Defines a tool: a name and description for the model, a zod input schema, and what it does. */
export function defineTool<Schema extends z.ZodType, Result, const Name extends string = string>(
  config: ToolConfig<Schema, Result, Name>,
): Tool<z.output<Schema>, Result, Name> {
  if (!toolName.test(config.name)) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `Tool name "${config.name}" must be 1 to 64 letters, digits, "_" or "-".`,
    );
  }
  const timeoutMs = config.timeoutMs ?? defaultToolTimeoutMs;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0 || timeoutMs > maxTimeoutMs) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `Tool "${config.name}" has timeoutMs ${timeoutMs}; it must be a whole number of milliseconds from 1 to ${maxTimeoutMs}.`,
    );
  }
  return {
    name: config.name,
    description: config.description,
    input: config.input as z.ZodType<z.output<Schema>>,
    idempotent: config.idempotent ?? false,
    retry: config.retry,
    timeoutMs,
    execute: redacting(config),
  };
}

/** The tool's `execute`, its result redacted as `config.redact` says before the run sees it. */
function redacting<Schema extends z.ZodType, Result, Name extends string>(
  config: ToolConfig<Schema, Result, Name>,
): ToolConfig<Schema, Result, Name>['execute'] {
  const { redact, execute } = config;
  if (redact === undefined) return execute;
  const redactResult = typeof redact === 'function' ? redact : redactFields(redact);
  return async (args, context) => redactResult(await execute(args, context)) as Result;
}

/** The command fields every call of a tool carries: whether it may run again, its retries, its timeout. */
export function toolCallPolicy(
  tool: AnyTool,
): Pick<PerformCommand, 'idempotent' | 'retry' | 'timeoutMs'> {
  return {
    idempotent: tool.idempotent,
    ...(tool.retry === undefined ? {} : { retry: tool.retry }),
    timeoutMs: tool.timeoutMs ?? defaultToolTimeoutMs,
  };
}

/** The JSON Schema of a zod schema, as sent to models. */
export function jsonSchemaOf(schema: z.ZodType): JsonObject {
  return z.toJSONSchema(schema, { unrepresentable: 'any' }) as JsonObject;
}

/** The model's view of a tool. */
export function toolSpec(tool: AnyTool): ToolSpec {
  return { name: tool.name, description: tool.description, inputSchema: jsonSchemaOf(tool.input) };
}

/** Validates a model's arguments for a tool; the failure reads as something a model can act on. */
export function parseToolArgs(
  tool: AnyTool,
  args: JsonValue,
): { ok: true; args: unknown } | { ok: false; message: string } {
  const parsed = tool.input.safeParse(args);
  if (parsed.success) return { ok: true, args: parsed.data };
  return {
    ok: false,
    message: `Invalid arguments for tool "${tool.name}": ${z.prettifyError(parsed.error)}`,
  };
}

/**
 * Runs a tool for one call: validates the arguments again (they may carry transforms), hands it the
 * call's context and idempotency key, and returns its result as JSON (`undefined` becomes `null`; a result
 * that is not JSON is `TOOL_FAILED`). What the tool throws that is not a Cairn error (an `Error`, a string,
 * anything) becomes `TOOL_FAILED` with its message, the thrown value kept as the cause; a Cairn error keeps
 * the code the tool chose.
 */
export async function executeTool(
  tool: AnyTool,
  args: JsonValue,
  call: { runId: string; toolCallId: string; signal: AbortSignal },
): Promise<JsonValue> {
  const parsed = parseToolArgs(tool, args);
  if (!parsed.ok) throw new CairnError('TOOL_INPUT_INVALID', parsed.message);
  let result: unknown;
  try {
    result = await tool.execute(parsed.args, {
      runId: call.runId,
      toolCallId: call.toolCallId,
      idempotencyKey: `${call.runId}:${call.toolCallId}`,
      signal: call.signal,
    });
  } catch (error) {
    if (isCairnError(error)) throw error;
    throw new CairnError('TOOL_FAILED', thrownMessage(error), { cause: error });
  }
  try {
    return storableJson(result ?? null) as JsonValue;
  } catch (error) {
    throw new CairnError(
      'TOOL_FAILED',
      `Tool "${tool.name}" returned a value that is not JSON: ${thrownMessage(error)}`,
      { cause: error },
    );
  }
}
