import { z } from 'zod';
import { CairnError } from './errors.js';
import type { JsonObject, JsonValue } from './json.js';
import type { ToolSpec } from './model.js';
import type { RetryPolicy } from './runtime/step-function.js';

/** What a tool's `execute` receives besides its arguments. */
export interface ToolContext {
  runId: string;
  toolCallId: string;
  /** `${runId}:${toolCallId}`: pass it to the systems the tool calls so a repeat can be recognised. */
  idempotencyKey: string;
  /** Aborts when the run is cancelled or its lease is lost. */
  signal: AbortSignal;
}

/** What `defineTool` takes. */
export interface ToolConfig<Schema extends z.ZodType, Result> {
  /** Letters, digits, `_` and `-`, at most 64: what providers accept. */
  name: string;
  description: string;
  input: Schema;
  execute(args: z.output<Schema>, context: ToolContext): Promise<Result> | Result;
  /**
   * Running it twice has the effect of running it once. A call in flight at a crash is then run again on
   * resume instead of being reported to the model as outcome unknown. @defaultValue false
   */
  idempotent?: boolean;
  /** Retries of `retryable` errors the tool throws. @defaultValue one try */
  retry?: RetryPolicy;
}

/** A tool an agent can call. Its result must be JSON. */
export interface Tool<Args = unknown, Result = unknown> {
  readonly name: string;
  readonly description: string;
  readonly input: z.ZodType<Args>;
  readonly idempotent: boolean;
  readonly retry: RetryPolicy | undefined;
  execute(args: Args, context: ToolContext): Promise<Result> | Result;
}

/** Any tool, whatever its argument and result types. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTool = Tool<any, any>;

const toolName = /^[A-Za-z0-9_-]{1,64}$/;

/** Defines a tool: a name and description for the model, a zod input schema, and what it does. */
export function defineTool<Schema extends z.ZodType, Result>(
  config: ToolConfig<Schema, Result>,
): Tool<z.output<Schema>, Result> {
  if (!toolName.test(config.name)) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `Tool name "${config.name}" must be 1 to 64 letters, digits, "_" or "-".`,
    );
  }
  return {
    name: config.name,
    description: config.description,
    input: config.input as z.ZodType<z.output<Schema>>,
    idempotent: config.idempotent ?? false,
    retry: config.retry,
    execute: config.execute,
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
 * call's context and idempotency key, and returns its result as JSON (`undefined` becomes `null`).
 */
export async function executeTool(
  tool: AnyTool,
  args: JsonValue,
  call: { runId: string; toolCallId: string; signal: AbortSignal },
): Promise<JsonValue> {
  const result: unknown = await tool.execute(tool.input.parse(args), {
    runId: call.runId,
    toolCallId: call.toolCallId,
    idempotencyKey: `${call.runId}:${call.toolCallId}`,
    signal: call.signal,
  });
  return (result ?? null) as JsonValue;
}
