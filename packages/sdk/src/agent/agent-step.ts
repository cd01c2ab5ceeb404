import type { z } from 'zod';
import {
  CairnError,
  OutputValidationError,
  serializeError,
  type SerializedError,
} from '../errors.js';
import type { JsonValue } from '../json.js';
import {
  addUsage,
  modelAnswerProblem,
  modelCallFailed,
  type CheckedModelResponse,
  type ModelMessage,
} from '../model.js';
import type {
  Command,
  Effect,
  PerformCommand,
  RetryPolicy,
  SettledEffect,
  StepEvent,
  StepResult,
} from '../runtime/step-function.js';
import type { EffectOutcome } from '../store/contract.js';
import { parseToolArgs, toolCallPolicy, type AnyTool } from '../tool.js';
import type { AgentState } from './agent-state.js';
import { distinctToolCallIds } from './tool-call-ids.js';

/** The parts of an agent definition its step function depends on. */
export interface AgentShape {
  tools: ReadonlyMap<string, AnyTool>;
  maxTrips: number;
  output: z.ZodType | undefined;
  modelRetry: RetryPolicy;
}

/** What the model is told about a tool call that was in flight at a crash and was not run again. */
export const outcomeUnknownResult = {
  error: 'OUTCOME_UNKNOWN',
  message:
    'This tool call was in flight when the run was interrupted: it may or may not have taken effect. ' +
    'Verify its effect before calling it again.',
};

/**
 * What the model is told about a call of unknown outcome: `outcomeUnknownResult` after a crash, or, for a call
 * abandoned past its timeout, why.
 */
function unknownResult(cause: SerializedError | undefined): JsonValue {
  if (cause === undefined) return outcomeUnknownResult;
  return {
    error: 'OUTCOME_UNKNOWN',
    message: `${cause.message} It may or may not have taken effect. Verify its effect before calling it again.`,
  };
}

type AgentStep = StepResult<AgentState>;

export function agentInit(input: string): AgentState {
  return {
    input,
    messages: [{ role: 'user', content: input }],
    trips: 0,
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
  };
}

/** The agent as a pure step function: a model call per trip, then the tool calls it asked for. */
export function agentStep(shape: AgentShape, state: AgentState, event: StepEvent): AgentStep {
  if (event.type === 'start') return nextTrip(shape, state);
  const [first] = event.effects;
  if (first !== undefined && first.id === modelEffectId(state.trips)) {
    return afterModel(shape, state, first.outcome);
  }
  return afterTools(shape, state, toolMessages(shape, state, event.effects));
}

/** What an agent's `checkStoredEffect` says of an effect read back from a store (see `DurableDefinition`). */
export function checkStoredAgentEffect(
  effect: Effect,
  settled?: { value: JsonValue },
): string | undefined {
  if (effect.kind === 'model') {
    if (typeof effect.trip !== 'number') return 'is a model call without its trip';
    return settled === undefined ? undefined : modelAnswerProblem(settled.value);
  }
  if (effect.kind === 'tool') {
    const complete =
      typeof effect.tool === 'string' &&
      typeof effect.toolCallId === 'string' &&
      typeof effect.trip === 'number';
    return complete ? undefined : 'is a tool call without its tool, call id or trip';
  }
  return `is of a kind agents never perform (${JSON.stringify(effect.kind)})`;
}

export function modelEffectId(trip: number): string {
  return `trip-${trip}/model`;
}

export function toolEffectId(trip: number, toolCallId: string): string {
  return `trip-${trip}/tool/${toolCallId}`;
}

function nextTrip(shape: AgentShape, state: AgentState): AgentStep {
  const model: PerformCommand = {
    type: 'perform',
    id: modelEffectId(state.trips),
    effect: { kind: 'model', trip: state.trips },
    idempotent: true,
    retry: shape.modelRetry,
  };
  return { state, commands: [{ type: 'checkpoint' }, model] };
}

function fail(state: AgentState, error: CairnError): AgentStep {
  return { state, commands: [{ type: 'fail', error: serializeError(error) }] };
}

function afterModel(shape: AgentShape, state: AgentState, outcome: EffectOutcome): AgentStep {
  if (outcome.status !== 'ok') {
    const cause = outcome.status === 'error' ? outcome.error : undefined;
    return fail(state, modelCallFailed(`The model call of trip ${state.trips}`, cause));
  }
  const response = outcome.value as unknown as CheckedModelResponse;
  // Effects, idempotency keys and answers are keyed by these ids: one per call, whatever the model gave.
  const toolCalls = distinctToolCallIds(response.toolCalls, state.trips, state.messages);
  const assistant: ModelMessage =
    toolCalls.length === 0
      ? { role: 'assistant', content: response.message.content }
      : { role: 'assistant', content: response.message.content, toolCalls };
  const next: AgentState = {
    ...state,
    messages: [...state.messages, assistant],
    trips: state.trips + 1,
    usage: addUsage(state.usage, response.usage),
  };
  if (toolCalls.length === 0) return finish(shape, next, response.message.content);

  const commands: Command[] = [];
  for (const [index, call] of toolCalls.entries()) {
    const tool = shape.tools.get(call.name);
    if (tool === undefined || !parseToolArgs(tool, call.args).ok) continue;
    // The id versions that kept repeated ids journaled this call under, shared with the call it repeated.
    const former = response.toolCalls[index]!.id || `call-${state.trips}-${index}`;
    commands.push({
      type: 'perform',
      id: toolEffectId(state.trips, call.id),
      ...(former === call.id ? {} : { formerId: toolEffectId(state.trips, former) }),
      effect: {
        kind: 'tool',
        tool: call.name,
        toolCallId: call.id,
        args: call.args,
        trip: state.trips,
      },
      ...toolCallPolicy(tool),
    });
  }
  // Every call was rejected before running: answer them all and go on to the next trip.
  if (commands.length === 0) return afterTools(shape, next, toolMessages(shape, next, []));
  return { state: next, commands };
}

/** The tool messages answering the last assistant message, in the order the model asked. */
function toolMessages(
  shape: AgentShape,
  state: AgentState,
  effects: readonly SettledEffect[],
): ModelMessage[] {
  const last = state.messages.at(-1);
  const calls = last?.role === 'assistant' ? (last.toolCalls ?? []) : [];
  const trip = state.trips - 1;
  const outcomes = new Map(effects.map((effect) => [effect.id, effect.outcome]));
  return calls.map((call): ModelMessage => {
    const answer = (content: JsonValue, outcome?: 'error' | 'unknown'): ModelMessage =>
      outcome === undefined
        ? { role: 'tool', toolCallId: call.id, toolName: call.name, content }
        : {
            role: 'tool',
            toolCallId: call.id,
            toolName: call.name,
            content,
            isError: true,
            outcome,
          };
    const tool = shape.tools.get(call.name);
    if (tool === undefined) {
      const known = [...shape.tools.keys()].join(', ') || 'none';
      return answer(
        {
          error: 'TOOL_NOT_FOUND',
          message: `There is no tool named "${call.name}". Tools: ${known}.`,
        },
        'error',
      );
    }
    const parsed = parseToolArgs(tool, call.args);
    if (!parsed.ok)
      return answer({ error: 'TOOL_INPUT_INVALID', message: parsed.message }, 'error');
    const outcome = outcomes.get(toolEffectId(trip, call.id));
    if (outcome === undefined || outcome.status === 'unknown')
      return answer(unknownResult(outcome?.error), 'unknown');
    if (outcome.status === 'error') {
      return answer({ error: outcome.error.code, message: outcome.error.message }, 'error');
    }
    return answer(outcome.value);
  });
}

function afterTools(shape: AgentShape, state: AgentState, answers: ModelMessage[]): AgentStep {
  const next: AgentState = { ...state, messages: [...state.messages, ...answers] };
  if (next.trips >= shape.maxTrips) {
    return fail(
      next,
      new CairnError(
        'MAX_TRIPS_EXCEEDED',
        `The agent used all ${shape.maxTrips} trips without giving a final answer.`,
        { data: { maxTrips: shape.maxTrips } },
      ),
    );
  }
  return nextTrip(shape, next);
}

function finish(shape: AgentShape, state: AgentState, content: string): AgentStep {
  if (shape.output === undefined)
    return { state, commands: [{ type: 'complete', output: content }] };
  let candidate: unknown;
  try {
    candidate = JSON.parse(content);
  } catch {
    return fail(state, new OutputValidationError('the final answer is not JSON', [content]));
  }
  const parsed = shape.output.safeParse(candidate);
  if (!parsed.success) {
    return fail(
      state,
      new OutputValidationError(
        parsed.error.issues.map((issue) => issue.message).join('; '),
        JSON.parse(JSON.stringify(parsed.error.issues)) as JsonValue,
      ),
    );
  }
  return { state, commands: [{ type: 'complete', output: parsed.data as JsonValue }] };
}
