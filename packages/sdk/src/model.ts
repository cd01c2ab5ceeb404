import { z } from 'zod';
import { CairnError, deserializeError, type SerializedError } from './errors.js';
import type { JsonInput, JsonObject, JsonValue } from './json.js';
import type { StreamPart } from './store/stream.js';

/**
 * A tool call the model asked for, as the conversation holds it. `args` are as the model gave them, before
 * validation.
 */
export interface ToolCall {
  [key: string]: JsonValue;
  id: string;
  name: string;
  args: JsonValue;
}

/**
 * A tool call as a model answers it: a `ToolCall` whose arguments may hold `undefined` properties (dropped
 * when the answer is journaled, as JSON drops them).
 */
export interface ModelToolCall {
  [key: string]: JsonInput | undefined;
  id: string;
  name: string;
  args: JsonInput;
}

/** Token counts of one or more model calls. */
export interface Usage {
  [key: string]: number | undefined;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  /** Input tokens served from the provider's prompt cache, where it reports them. */
  cachedInputTokens?: number;
}

/** One message of a conversation, in a provider-neutral shape. */
export type ModelMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | {
      role: 'tool';
      toolCallId: string;
      toolName: string;
      content: JsonValue;
      isError?: boolean;
      /** `unknown` when the call was in flight at a crash and was not run again. */
      outcome?: 'ok' | 'error' | 'unknown';
    };

/** A tool as the model sees it: name, description, and its input as JSON Schema. */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: JsonObject;
}

/** What the runtime asks a model. */
export interface ModelRequest {
  messages: ModelMessage[];
  tools: ToolSpec[];
  /** JSON Schema the final answer must follow, when the agent has an `output` schema. */
  responseSchema?: JsonObject;
  signal: AbortSignal;
}

/**
 * What a model answers: text, the tool calls it wants, and the usage of this call. Tool call arguments are
 * JSON; an object property that is `undefined` is dropped, as JSON drops it.
 */
export interface ModelResponse {
  message: { role: 'assistant'; content: string };
  toolCalls: ModelToolCall[];
  usage: Usage;
  finishReason?: string;
}

/** A model's answer as the runtime journals it, once checked: its tool calls are JSON as stored. */
export interface CheckedModelResponse extends Omit<ModelResponse, 'toolCalls'> {
  toolCalls: ToolCall[];
}

/**
 * A provider-neutral model. Adapters for real providers implement it; a failure a retry may fix should be
 * thrown as a `CairnError` with `retryable: true` (and `data.retryAfterMs` when the provider says when).
 */
export interface Model {
  readonly name: string;
  readonly provider: string;
  generate(request: ModelRequest): Promise<ModelResponse>;
  /**
   * The same answer as `generate`, streamed: `onPart` is called with each delta as it arrives (text,
   * reasoning, a tool call's input), and the promise resolves with the whole answer once the model finished,
   * which is what the runtime journals. Optional: a run of a model without it streams its whole text at once.
   */
  stream?(request: ModelRequest, onPart: (part: ModelStreamPart) => void): Promise<ModelResponse>;
}

/** A delta a streaming model reports. */
export type ModelStreamPart = Exclude<StreamPart, { type: 'superseded' }>;

/** JSON nested deeper than this is refused: a model's tool arguments are never that deep. */
const maxJsonDepth = 256;

/**
 * Whether a value is JSON: null, a boolean, a finite number, a string, or arrays and plain objects of those.
 * A plain loop, not a recursive zod union: it runs on every model answer.
 */
function isJsonValue(value: unknown, depth = 0): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object' || depth >= maxJsonDepth) return false;
  if (Array.isArray(value)) return value.every((item) => isJsonValue(item, depth + 1));
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) return false;
  for (const key in value) {
    const property = (value as Record<string, unknown>)[key];
    // An undefined property is dropped when the answer is stored, as JSON drops it.
    if (property !== undefined && !isJsonValue(property, depth + 1)) return false;
  }
  return true;
}

const jsonValue = z.custom<JsonValue>((value) => isJsonValue(value), {
  message: `Expected a JSON value (null, boolean, finite number, string, array or plain object, at most ${maxJsonDepth} deep)`,
});

const count = z.number().int().nonnegative();

/** Checks what a model returned before the runtime journals it. */
export const modelResponseSchema = z.object({
  message: z.object({ role: z.literal('assistant'), content: z.string() }),
  toolCalls: z.array(z.object({ id: z.string(), name: z.string(), args: jsonValue })),
  usage: z.object({
    inputTokens: count,
    outputTokens: count,
    totalTokens: count,
    cachedInputTokens: count.optional(),
  }),
  finishReason: z.string().optional(),
});

/** Why a value read back from a journal is not a checked model answer, or undefined when it is one. */
export function modelAnswerProblem(value: unknown): string | undefined {
  const parsed = modelResponseSchema.safeParse(value);
  return parsed.success ? undefined : `is not a model answer (${z.prettifyError(parsed.error)})`;
}

/** Usage of no calls. */
export const zeroUsage: Usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };

/** Adds two usage totals; cached tokens appear when either side reports them. */
export function addUsage(a: Usage, b: Usage): Usage {
  const sum: Usage = {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  };
  if (a.cachedInputTokens !== undefined || b.cachedInputTokens !== undefined) {
    sum.cachedInputTokens = (a.cachedInputTokens ?? 0) + (b.cachedInputTokens ?? 0);
  }
  return sum;
}

/**
 * Asks a model and checks its answer before the runtime journals it: a malformed response is a typed
 * `MODEL_FAILED` error, not a corrupt journal entry.
 */
export async function generateChecked(
  model: Model,
  request: ModelRequest,
  onPart?: (part: ModelStreamPart) => void,
): Promise<JsonValue> {
  const response =
    onPart === undefined
      ? await model.generate(request)
      : model.stream !== undefined
        ? await model.stream(request, onPart)
        : await generateAsStream(model, request, onPart);
  const parsed = modelResponseSchema.safeParse(response);
  if (!parsed.success) {
    throw new CairnError(
      'MODEL_FAILED',
      `Model "${model.name}" returned a malformed response: ${z.prettifyError(parsed.error)}`,
    );
  }
  return parsed.data as unknown as JsonValue;
}

/** A model that does not stream, streamed: its whole answer at once, once it came. */
async function generateAsStream(
  model: Model,
  request: ModelRequest,
  onPart: (part: ModelStreamPart) => void,
): Promise<ModelResponse> {
  const response = await model.generate(request);
  const text: unknown = response?.message?.content;
  if (typeof text === 'string' && text.length > 0) onPart({ type: 'text', text });
  for (const call of Array.isArray(response?.toolCalls) ? response.toolCalls : []) {
    if (typeof call?.id !== 'string' || typeof call.name !== 'string') continue;
    let args: string;
    try {
      args = JSON.stringify(call.args ?? null);
    } catch {
      continue; // Not JSON: the answer's check below refuses it.
    }
    onPart({ type: 'tool-input-start', toolCallId: call.id, toolName: call.name });
    onPart({ type: 'tool-input', toolCallId: call.id, delta: args });
  }
  return response;
}

/**
 * The `MODEL_FAILED` error of a model call that did not answer: `call` names it ("The planning model call"),
 * `cause` is its stored error (none when it was in flight at a crash and is not run again). The provider's
 * detail (`data.provider`, `data.statusCode`, `data.retryAfterMs`, ...) is kept in `data`, and the stored
 * error comes back as the `cause`.
 */
export function modelCallFailed(call: string, cause: SerializedError | undefined): CairnError {
  if (cause === undefined) return new CairnError('MODEL_FAILED', `${call} failed: no answer`);
  return new CairnError('MODEL_FAILED', `${call} failed: ${cause.message}`, {
    data: { ...cause.data, cause: { code: cause.code, message: cause.message } },
    cause: deserializeError(cause),
  });
}
