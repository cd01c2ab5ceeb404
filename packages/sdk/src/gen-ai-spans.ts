import type { Attributes } from '@opentelemetry/api';
import type { JsonValue } from './json.js';
import type { CheckedModelResponse, Model } from './model.js';

/**
 * Span names and attributes of the OpenTelemetry GenAI semantic conventions, shared by agents and planners.
 */
export function chatSpan(
  model: Model,
  extra: Attributes = {},
): { name: string; attributes: Attributes } {
  return {
    name: `chat ${model.name}`,
    attributes: {
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': model.name,
      'gen_ai.provider.name': model.provider,
      // The attribute older backends read for the provider.
      'gen_ai.system': model.provider,
      ...extra,
    },
  };
}

/** The `execute_tool` span of one tool call. */
export function toolSpan(tool: string, callId: string): { name: string; attributes: Attributes } {
  return {
    name: `execute_tool ${tool}`,
    attributes: {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': tool,
      'gen_ai.tool.call.id': callId,
    },
  };
}

/** Token usage and finish reason of a settled model call, as span attributes. */
export function chatResultAttributes(value: JsonValue): Attributes {
  const response = value as unknown as CheckedModelResponse;
  return {
    'gen_ai.usage.input_tokens': response.usage.inputTokens,
    'gen_ai.usage.output_tokens': response.usage.outputTokens,
    ...(response.finishReason === undefined
      ? {}
      : { 'gen_ai.response.finish_reasons': [response.finishReason] }),
  };
}
