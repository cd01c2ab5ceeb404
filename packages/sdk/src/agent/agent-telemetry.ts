import { chatResultAttributes, chatSpan, toolSpan } from '../gen-ai-spans.js';
import type { Model } from '../model.js';
import type { EffectTelemetry } from '../runtime/step-function.js';

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
        ? chatSpan(model, { 'gen_ai.agent.name': agentName })
        : toolSpan(String(effect.tool), String(effect.toolCallId)),
    result: (effect, value) => (effect.kind === 'model' ? chatResultAttributes(value) : {}),
  };
}
