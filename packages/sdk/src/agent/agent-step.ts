import type { z } from 'zod';
import {
  CairnError,
  OutputValidationError,
  serializeError,
  type SerializedError,
} from '../errors.js';
import { canonicalJson, type JsonValue } from '../json.js';
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
import type { RunSignal } from '../store/waits.js';
import { parseToolArgs, toolCallPolicy, type AnyTool } from '../tool.js';
import { agentSignals } from './agent-signals.js';
import {
  heldCall,
  needsApproval,
  rejectionMessage,
  type ApprovalPolicy,
  type HeldCall,
} from '../approvals.js';
import type { AgentState, HeldTrip } from './agent-state.js';
import {
  sleepUntil,
  takeSignals,
  waitDetail,
  waitToolLimit,
  withEarlyDecision,
} from './agent-waits.js';
import { distinctToolCallIds } from './tool-call-ids.js';

/** The parts of an agent definition its step function depends on. */
export interface AgentShape {
  tools: ReadonlyMap<string, AnyTool>;
  maxTrips: number;
  output: z.ZodType | undefined;
  modelRetry: RetryPolicy;
  approval: ApprovalPolicy | undefined;
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
export function unknownResult(cause: SerializedError | undefined): JsonValue {
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
  if (event.type === 'woken' || event.type === 'signals')
    return afterSignals(shape, state, event.signals, event.now);
  const [first] = event.effects;
  if (first !== undefined && first.id === modelEffectId(state.trips)) {
    return afterModel(shape, state, first.outcome, event.now);
  }
  if (state.held !== undefined) {
    const settled = [...state.held.settled, ...event.effects];
    return continueHeld(shape, { ...state, held: { ...state.held, settled } }, event.now);
  }
  return afterTools(shape, state, toolMessages(shape, state, event.effects));
}

/**
 * What an agent's `checkStoredEffect` says of an effect read back from a store (see `DurableDefinition`): a model
 * call of a trip, with an answer a model gives; or a call of one of its tools, with arguments that tool takes,
 * that the conversation's last answer asked for, in the current trip.
 */
export function checkStoredAgentEffect(
  shape: Pick<AgentShape, 'tools'>,
  effect: Effect,
  settled: { value: JsonValue } | undefined,
  state: AgentState,
): string | undefined {
  if (effect.kind === 'model') {
    if (typeof effect.trip !== 'number') return 'is a model call without its trip';
    return settled === undefined ? undefined : modelAnswerProblem(settled.value);
  }
  if (effect.kind !== 'tool')
    return `is of a kind agents never perform (${JSON.stringify(effect.kind)})`;
  const { tool: name, toolCallId, trip } = effect;
  if (typeof name !== 'string' || typeof toolCallId !== 'string' || typeof trip !== 'number')
    return 'is a tool call without its tool, call id or trip';
  const tool = shape.tools.get(name);
  if (tool === undefined) return `calls "${name}", which is not one of the agent's tools`;
  const args = (effect.args ?? null) as JsonValue;
  const parsed = parseToolArgs(tool, args);
  if (!parsed.ok) return `has arguments its tool cannot take (${parsed.message})`;
  const last = state.messages.at(-1);
  const asked =
    trip === state.trips - 1 &&
    last?.role === 'assistant' &&
    (last.toolCalls ?? []).some(
      (call) =>
        call.id === toolCallId &&
        call.name === name &&
        canonicalJson(call.args) === canonicalJson(args),
    );
  return asked
    ? undefined
    : `is a call the conversation's last answer did not ask for (${toolCallId})`;
}

export function modelEffectId(trip: number): string {
  return `trip-${trip}/model`;
}

export function toolEffectId(trip: number, toolCallId: string): string {
  return `trip-${trip}/tool/${toolCallId}`;
}

function nextTrip(shape: AgentShape, before: AgentState): AgentStep {
  // Messages sent to the run join the conversation here, after the last trip's tool answers.
  const { inbox, ...state } = before;
  if (inbox !== undefined && inbox.length > 0) {
    state.messages = [
      ...state.messages,
      ...inbox.map((message): ModelMessage => ({ role: 'user', content: message.content })),
    ];
  }
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

function afterModel(
  shape: AgentShape,
  state: AgentState,
  outcome: EffectOutcome,
  now: number,
): AgentStep {
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
  const held: HeldTrip = { settled: [], approvals: [] };
  for (const [index, call] of toolCalls.entries()) {
    const tool = shape.tools.get(call.name);
    const parsed = tool === undefined ? undefined : parseToolArgs(tool, call.args);
    if (tool === undefined || !parsed?.ok) continue;
    // A call that waits (a sleep the model asked for, a call the policy holds back) runs later, if at all.
    const maxSeconds = waitToolLimit(tool);
    if (maxSeconds !== undefined) {
      const until = sleepUntil(parsed.args as never, now, maxSeconds);
      const sleep = held.sleep ?? { callIds: [], until };
      held.sleep = { callIds: [...sleep.callIds, call.id], until: Math.max(sleep.until, until) };
      continue;
    }
    if (needsApproval(shape.approval, call.name, parsed.args)) {
      const fresh = heldCall(call.id, call.name, call.args, { approval: shape.approval, now });
      const { call: decided, earlyDecisions } = withEarlyDecision(next, fresh);
      held.approvals.push(decided);
      if (earlyDecisions === undefined) delete next.earlyDecisions;
      else next.earlyDecisions = earlyDecisions;
      continue;
    }
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
  if (held.approvals.length > 0 || held.sleep !== undefined) {
    const holding: AgentState = { ...next, held };
    // The calls that need nothing run now; the trip waits for the others once they settled.
    return commands.length > 0 ? { state: holding, commands } : continueHeld(shape, holding, now);
  }
  // Every call was rejected before running: answer them all and go on to the next trip.
  if (commands.length === 0) return afterTools(shape, next, toolMessages(shape, next, []));
  return { state: next, commands };
}

/**
 * Signals handed to the run: taken into the state, then the run goes on from where it was: a held trip
 * decides again, a trip boundary starts the next trip (with the messages), and an agent that was about to end
 * with its answer reads the messages first.
 */
function afterSignals(
  shape: AgentShape,
  state: AgentState,
  signals: readonly RunSignal[],
  now: number,
): AgentStep {
  let next: AgentState;
  try {
    next = takeSignals(state, signals, { approval: shape.approval, now });
  } catch (error) {
    return fail(state, error as CairnError);
  }
  if (next.held !== undefined) return continueHeld(shape, next, now);
  const last = next.messages.at(-1);
  const answered = last?.role === 'assistant' && (last.toolCalls ?? []).length === 0;
  if (answered && (next.inbox ?? []).length === 0) return finish(shape, next, last.content);
  if (answered && next.trips >= shape.maxTrips) return maxTripsExceeded(shape, next);
  return nextTrip(shape, next);
}

/**
 * A held trip goes on: approved calls run; while calls still wait for a decision or the sleep has time left,
 * the run waits (for a decision, a steer, or the earliest deadline); once every call has its answer, the
 * trip ends as any trip does.
 */
function continueHeld(shape: AgentShape, state: AgentState, now: number): AgentStep {
  const held = state.held!;
  const trip = state.trips - 1;
  const approved = held.approvals.filter((c) => c.decision?.approved === true && !c.started);
  if (approved.length > 0) {
    const approvals = held.approvals.map((c) =>
      approved.includes(c) ? { ...c, started: true } : c,
    );
    return {
      state: { ...state, held: { ...held, approvals } },
      commands: approved.map((call) => heldToolCommand(shape, trip, call)),
    };
  }
  const undecided = held.approvals.filter((c) => c.decision === undefined);
  const sleep = held.sleep;
  const sleeping = sleep !== undefined && sleep.interruptedAt === undefined && sleep.until > now;
  if (undecided.length > 0 || sleeping) {
    const times = undecided.flatMap((c) => (c.deadline === null ? [] : [c.deadline]));
    if (sleeping) times.push(sleep.until);
    return {
      state,
      commands: [
        {
          type: 'wait',
          ...(times.length === 0 ? {} : { until: Math.min(...times) }),
          signals:
            undecided.length > 0
              ? [agentSignals.approval, agentSignals.steer]
              : [agentSignals.steer],
          detail: waitDetail(held),
        },
      ],
    };
  }
  const answers: SettledEffect[] = [...held.settled];
  for (const call of held.approvals) {
    if (call.decision?.approved !== false) continue;
    answers.push({
      id: toolEffectId(trip, call.callId),
      outcome: {
        status: 'error',
        error: {
          name: 'CairnError',
          code: 'TOOL_REJECTED',
          message: rejectionMessage(call.decision),
          retryable: false,
        },
      },
    });
  }
  for (const callId of sleep?.callIds ?? []) {
    const value: { [key: string]: JsonValue } = { wokeAt: new Date(now).toISOString() };
    if (sleep?.interruptedAt !== undefined) value.interrupted = 'A new instruction arrived.';
    answers.push({ id: toolEffectId(trip, callId), outcome: { status: 'ok', value } });
  }
  const { held: _answered, ...rest } = state;
  return afterTools(shape, rest, toolMessages(shape, rest, answers));
}

/** The command that runs a call once it was approved: the same effect it would have been without the policy. */
function heldToolCommand(shape: AgentShape, trip: number, call: HeldCall): PerformCommand {
  return {
    type: 'perform',
    id: toolEffectId(trip, call.callId),
    effect: { kind: 'tool', tool: call.tool, toolCallId: call.callId, args: call.args, trip },
    ...toolCallPolicy(shape.tools.get(call.tool)!),
  };
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
  if (next.trips >= shape.maxTrips) return maxTripsExceeded(shape, next);
  return nextTrip(shape, next);
}

function maxTripsExceeded(shape: AgentShape, state: AgentState): AgentStep {
  return fail(
    state,
    new CairnError(
      'MAX_TRIPS_EXCEEDED',
      `The agent used all ${shape.maxTrips} trips without giving a final answer.`,
      { data: { maxTrips: shape.maxTrips } },
    ),
  );
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
