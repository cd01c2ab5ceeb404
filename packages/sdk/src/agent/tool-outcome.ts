import type { EffectOutcome } from '../store/contract.js';
import { fitsChunk, maxStreamName, maxStreamText, type ToolOutcomePart } from '../store/stream.js';
import type { Effect } from '../runtime/step-function.js';
import { unknownResult } from './agent-step.js';

/**
 * What a streaming agent's tool call says once it settled: its output, its error, or that its outcome is
 * unknown, in the words the model is told. A model call says nothing here: its deltas already said it all.
 */
export function toolOutcomePart(
  effect: Effect,
  outcome: EffectOutcome,
): ToolOutcomePart | undefined {
  const toolCallId = effect.toolCallId;
  // An id too long for the stream was never shown (its input was not streamed either): nothing to settle.
  if (effect.kind !== 'tool' || typeof toolCallId !== 'string' || toolCallId.length > maxStreamName)
    return undefined;
  switch (outcome.status) {
    case 'ok':
      // A big output is not copied into the stream: the run's history and final messages keep it.
      return fitsChunk(outcome.value)
        ? { type: 'tool-outcome', toolCallId, outcome: 'ok', output: outcome.value }
        : { type: 'tool-outcome', toolCallId, outcome: 'ok', truncated: true };
    case 'error':
      return {
        type: 'tool-outcome',
        toolCallId,
        outcome: 'error',
        errorText: clipped(outcome.error.message),
      };
    case 'unknown': {
      const { message } = unknownResult(outcome.error) as { message: string };
      return { type: 'tool-outcome', toolCallId, outcome: 'unknown', errorText: clipped(message) };
    }
  }
}

/** A message cut to what a chunk holds, so a long one costs its tail, not the stream. */
function clipped(message: string): string {
  return message.length <= maxStreamText ? message : `${message.slice(0, maxStreamText - 1)}…`;
}
