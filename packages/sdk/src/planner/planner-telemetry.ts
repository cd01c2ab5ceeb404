import type { JsonValue } from '../json.js';
import type { Model, ModelResponse } from '../model.js';
import type { EffectTelemetry } from '../runtime/tracing.js';

/**
 * Spans of a planner's effects: a `chat` span per planning call (GenAI conventions, with token usage), and
 * a `cairn.node` span per node holding an `execute_tool` span, or an `invoke_agent` span under which the
 * child agent run's own spans nest.
 */
export function plannerTelemetry(
  plannerName: string,
  model: Model,
  agentCapabilities: ReadonlySet<string>,
): EffectTelemetry {
  return {
    unit: (effect) =>
      effect.kind === 'node'
        ? {
            key: `node/${String(effect.node)}`,
            name: 'cairn.node',
            attributes: {
              'cairn.node.id': String(effect.node),
              'cairn.node.capability': String(effect.capability),
              'cairn.planner.name': plannerName,
            },
          }
        : undefined,
    span: (effect) => {
      if (effect.kind === 'plan') {
        return {
          name: `chat ${model.name}`,
          attributes: {
            'gen_ai.operation.name': 'chat',
            'gen_ai.request.model': model.name,
            'gen_ai.provider.name': model.provider,
            'gen_ai.system': model.provider,
            'cairn.planner.name': plannerName,
          },
        };
      }
      const capability = String(effect.capability);
      return agentCapabilities.has(capability)
        ? {
            name: `invoke_agent ${capability}`,
            attributes: {
              'gen_ai.operation.name': 'invoke_agent',
              'gen_ai.agent.name': capability,
            },
          }
        : {
            name: `execute_tool ${capability}`,
            attributes: {
              'gen_ai.operation.name': 'execute_tool',
              'gen_ai.tool.name': capability,
              'gen_ai.tool.call.id': String(effect.node),
            },
          };
    },
    result: (effect, value: JsonValue) => {
      if (effect.kind !== 'plan') return {};
      const response = value as unknown as ModelResponse;
      return {
        'gen_ai.usage.input_tokens': response.usage.inputTokens,
        'gen_ai.usage.output_tokens': response.usage.outputTokens,
      };
    },
  };
}
