import type {
  LanguageModelV3FinishReason,
  LanguageModelV3GenerateResult,
  LanguageModelV3ToolCall,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';
import type { JsonValue, ModelResponse, Usage } from '@cairn/sdk';

/**
 * Turns a V3 result into a Cairn response: the text parts joined, the tool calls the client must run
 * (provider-executed ones are the provider's business), usage and the unified finish reason.
 * Everything in it is plain JSON, so the runtime can journal it.
 */
export function fromResult(result: LanguageModelV3GenerateResult): ModelResponse {
  let text = '';
  const toolCalls: LanguageModelV3ToolCall[] = [];
  for (const part of result.content) {
    if (part.type === 'text') text += part.text;
    else if (part.type === 'tool-call') toolCalls.push(part);
  }
  return responseOf({ text, toolCalls, usage: result.usage, finishReason: result.finishReason });
}

/** What a model answered, gathered from a result's content or from its stream. */
export interface Answer {
  text: string;
  /** Every tool call of the answer, provider-executed ones included, in order. */
  toolCalls: readonly LanguageModelV3ToolCall[];
  usage: LanguageModelV3Usage;
  finishReason: LanguageModelV3FinishReason | string | undefined;
}

/** The Cairn response of an answer: the client's tool calls with their input parsed, usage, finish reason. */
export function responseOf(answer: Answer): ModelResponse {
  const response: ModelResponse = {
    message: { role: 'assistant', content: answer.text },
    toolCalls: answer.toolCalls
      .filter((call) => call.providerExecuted !== true)
      .map((call) => ({ id: call.toolCallId, name: call.toolName, args: parseInput(call.input) })),
    usage: fromUsage(answer.usage),
  };
  const finishReason = finishReasonOf(answer.finishReason);
  if (finishReason !== undefined) response.finishReason = finishReason;
  return response;
}

/**
 * Parses a tool call's JSON-encoded input. Empty input means no arguments (`{}`); input that is not JSON
 * is kept as its raw string, which no object schema accepts, so the agent answers it as invalid arguments.
 */
export function parseInput(input: string): JsonValue {
  if (input.trim() === '') return {};
  try {
    return JSON.parse(input) as JsonValue;
  } catch {
    return input;
  }
}

/** V3 usage (nested counts, any of which a provider may leave out) as Cairn's flat usage. */
export function fromUsage(usage: LanguageModelV3Usage): Usage {
  const { inputTokens: input, outputTokens: output } = usage;
  const inputTokens = count(
    input.total ??
      (input.noCache === undefined && input.cacheRead === undefined
        ? undefined
        : (input.noCache ?? 0) + (input.cacheRead ?? 0)),
  );
  const outputTokens = count(
    output.total ??
      (output.text === undefined && output.reasoning === undefined
        ? undefined
        : (output.text ?? 0) + (output.reasoning ?? 0)),
  );
  const result: Usage = { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens };
  if (input.cacheRead !== undefined) result.cachedInputTokens = count(input.cacheRead);
  return result;
}

function count(value: number | undefined): number {
  return value !== undefined && Number.isFinite(value) && value > 0 ? Math.round(value) : 0;
}

function finishReasonOf(
  reason: LanguageModelV3FinishReason | string | undefined,
): string | undefined {
  if (reason === undefined) return undefined;
  // Providers written against the V2 draft of the spec still answer a bare string.
  return typeof reason === 'string' ? reason : reason.unified;
}
