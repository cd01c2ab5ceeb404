import type { JsonValue } from '../json.js';
import type { Model, ModelResponse } from '../model.js';
import type { EffectTelemetry } from '../runtime/tracing.js';

/**
 * Spans of an agent's effects: one `cairn.trip` per trip holding a `chat` span for the model call (GenAI
 * semantic conventions, with token usage) and an `execute_tool` span per tool call.
 */
export function agentTelemetry(agentName: string, model: Model): EffectTelemetry {
  return {
    unit: (effect) => {
      const trip = Number(effect.trip);
      return {
        key: `trip-${trip}`,
        name: 'cairn.trip',
        attributes: { 'cairn.trip.index': trip, 'cairn.agent.name': agentName },
      };
    },
    span: (effect) =>
      effect.kind === 'model'
        ? {
            name: `chat ${model.name}`,
            attributes: {
              'gen_ai.operation.name': 'chat',
              'gen_ai.request.model': model.name,
              'gen_ai.provider.name': model.provider,
              'gen_ai.system': model.provider,
              'gen_ai.agent.name': agentName,
            },
          }
        : {
            name: `execute_tool ${String(effect.tool)}`,
            attributes: {
              'gen_ai.operation.name': 'execute_tool',
              'gen_ai.tool.name': String(effect.tool),
              'gen_ai.tool.call.id': String(effect.toolCallId),
            },
          },
    result: (effect, value: JsonValue) => {
      if (effect.kind !== 'model') return {};
      const response = value as unknown as ModelResponse;
      return {
        'gen_ai.usage.input_tokens': response.usage.inputTokens,
        'gen_ai.usage.output_tokens': response.usage.outputTokens,
        ...(response.finishReason === undefined
          ? {}
          : { 'gen_ai.response.finish_reasons': [response.finishReason] }),
      };
    },
  };
}
