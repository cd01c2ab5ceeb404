import { chatResultAttributes, chatSpan, toolSpan } from '../gen-ai-spans.js';
import type { Model } from '../model.js';
import type { EffectTelemetry } from '../runtime/step-function.js';

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
      if (effect.kind === 'plan') return chatSpan(model, { 'cairn.planner.name': plannerName });
      const capability = String(effect.capability);
      return agentCapabilities.has(capability)
        ? {
            name: `invoke_agent ${capability}`,
            attributes: {
              'gen_ai.operation.name': 'invoke_agent',
              'gen_ai.agent.name': capability,
            },
          }
        : toolSpan(capability, String(effect.node));
    },
    result: (effect, value) => (effect.kind === 'plan' ? chatResultAttributes(value) : {}),
  };
}
