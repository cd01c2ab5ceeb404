import {
  CairnError,
  deserializeError,
  NodeFailedError,
  serializeError,
  type SerializedError,
} from '../errors.js';
import type { JsonValue } from '../json.js';
import { addUsage, zeroUsage, type CheckedModelResponse } from '../model.js';
import type {
  Command,
  PerformCommand,
  RetryPolicy,
  SettledEffect,
  StepEvent,
  StepResult,
} from '../runtime/step-function.js';
import type { EffectOutcome } from '../store/contract.js';
import { parseToolArgs, toolCallPolicy } from '../tool.js';
import { isAgent, type Capability } from './capability.js';
import { validatePlan, type PlanNode } from './plan.js';
import { goalMessage, rejectionMessage, replanMessage } from './planner-prompt.js';
import type { ChildReport, LedgerEntry, PlannerState } from './planner-state.js';
import { resolveRefs } from './refs.js';

/** The parts of a planner definition its step function depends on. */
export interface PlannerShape {
  capabilities: ReadonlyMap<string, Capability>;
  maxParallel: number;
  maxReplans: number;
  maxPlanAttempts: number;
  modelRetry: RetryPolicy;
}

/** What an agent node's effect settles with: the child's output and its report. */
export interface AgentNodeValue {
  output: JsonValue;
  child: ChildReport;
}

type PlannerStep = StepResult<PlannerState>;

export function plannerInit(goal: string): PlannerState {
  return {
    goal,
    phase: 'planning',
    conversation: [{ role: 'user', content: goalMessage(goal) }],
    invalidPlans: 0,
    plan: null,
    ledger: [],
    usage: zeroUsage,
    replanCount: 0,
    running: [],
  };
}

/** The effect id of a planning call: one per call ever made in the run, so each is journaled apart. */
export function planEffectId(state: PlannerState): string {
  return `plan-${state.conversation.filter((message) => message.role === 'assistant').length}`;
}

/** The effect id of a node; its last segment is the node id. */
export function nodeEffectId(nodeId: string): string {
  return `node/${nodeId}`;
}

/**
 * The planner as a pure step function: ask the planning model for a plan until one is valid, freeze it,
 * then run its nodes as their dependencies settle, up to `maxParallel` at once, with a checkpoint after
 * every settled node (the runtime hands it each node as it settles). After a failure it starts nothing
 * new, lets the running nodes settle, then replans the unfinished part.
 */
export function plannerStep(
  shape: PlannerShape,
  state: PlannerState,
  event: StepEvent,
): PlannerStep {
  if (event.type === 'start')
    return state.phase === 'planning' ? askPlanner(shape, state) : dispatch(shape, state);
  if (state.phase === 'planning') {
    const settled = event.effects.find((effect) => effect.id === planEffectId(state));
    return afterPlanning(shape, state, settled?.outcome ?? { status: 'unknown' });
  }
  return afterNodes(shape, state, event.effects);
}

function askPlanner(shape: PlannerShape, state: PlannerState): PlannerStep {
  const command: PerformCommand = {
    type: 'perform',
    id: planEffectId(state),
    effect: { kind: 'plan' },
    idempotent: true,
    retry: shape.modelRetry,
  };
  return { state, commands: [{ type: 'checkpoint' }, command] };
}

function fail(state: PlannerState, error: CairnError): PlannerStep {
  return { state, commands: [{ type: 'fail', error: serializeError(error) }] };
}

function afterPlanning(
  shape: PlannerShape,
  state: PlannerState,
  outcome: EffectOutcome,
): PlannerStep {
  if (outcome.status !== 'ok') {
    const cause = outcome.status === 'error' ? outcome.error : undefined;
    return fail(
      state,
      new CairnError(
        'MODEL_FAILED',
        `The planning model call failed: ${cause?.message ?? 'no answer'}`,
        {
          data: cause === undefined ? {} : { cause: { code: cause.code, message: cause.message } },
        },
      ),
    );
  }
  const response = outcome.value as unknown as CheckedModelResponse;
  const answer = response.message.content;
  const answered: PlannerState = {
    ...state,
    conversation: [...state.conversation, { role: 'assistant', content: answer }],
    usage: addUsage(state.usage, response.usage),
  };
  const check = validatePlan(answer, {
    capabilities: shape.capabilities,
    completed: new Set(completedOutputs(state).keys()),
    failed: new Set(state.ledger.filter((e) => e.status !== 'completed').map((e) => e.id)),
  });
  if (!check.ok) {
    const invalidPlans = state.invalidPlans + 1;
    if (invalidPlans >= shape.maxPlanAttempts) {
      return fail(
        { ...answered, invalidPlans },
        new CairnError(
          'PLAN_INVALID',
          `The planning model gave ${invalidPlans} invalid plans in a row; the last one: ${check.problems.join(' ')}`,
          { data: { attempts: invalidPlans, problems: check.problems } },
        ),
      );
    }
    const rejection = rejectionMessage(check.problems, shape.maxPlanAttempts - invalidPlans);
    return askPlanner(shape, {
      ...answered,
      invalidPlans,
      conversation: [...answered.conversation, { role: 'user', content: rejection }],
    });
  }
  const revision = state.plan === null ? 0 : state.plan.revision + 1;
  const { nodes, output } = check.plan;
  return dispatch(shape, {
    ...answered,
    phase: 'executing',
    invalidPlans: 0,
    plan: output === undefined ? { revision, nodes } : { revision, nodes, output },
  });
}

function completedOutputs(state: PlannerState): Map<string, JsonValue> {
  const outputs = new Map<string, JsonValue>();
  for (const entry of state.ledger) {
    if (entry.status === 'completed') outputs.set(entry.id, entry.output ?? null);
  }
  return outputs;
}

/**
 * Starts every ready node while fewer than `maxParallel` run, completes the run when every node settled,
 * or, after a failure of the current plan, waits for the running nodes and then replans.
 */
function dispatch(shape: PlannerShape, state: PlannerState): PlannerStep {
  const plan = state.plan;
  if (plan === null) return askPlanner(shape, state);
  const settle: Command[] = [{ type: 'checkpoint' }];
  const failures = state.ledger.filter(
    (entry) => entry.revision === plan.revision && entry.status !== 'completed',
  );
  if (failures.length > 0) {
    return state.running.length > 0
      ? { state, commands: settle }
      : afterFailures(shape, state, failures);
  }
  const ran = new Set(state.ledger.map((entry) => entry.id));
  const running = new Set(state.running);
  const remaining = plan.nodes.filter((node) => !ran.has(node.id));
  const outputs = completedOutputs(state);
  if (remaining.length === 0) return complete(state, outputs);

  const ready = remaining
    .filter((node) => !running.has(node.id))
    .filter((node) => node.dependsOn.every((dependency) => outputs.has(dependency)))
    .slice(0, Math.max(0, shape.maxParallel - running.size));
  if (ready.length === 0) {
    if (running.size > 0) return { state, commands: settle };
    return fail(
      state,
      new CairnError('PLAN_INVALID', `No node of plan revision ${plan.revision} can run.`, {
        data: { remaining: remaining.map((node) => node.id) },
      }),
    );
  }
  const commands: Command[] = [...settle];
  const rejected: LedgerEntry[] = [];
  const started: string[] = [];
  for (const node of ready) {
    const prepared = prepare(shape, node, outputs);
    if (prepared.type === 'perform') {
      commands.push(prepared);
      started.push(node.id);
    } else rejected.push({ ...entryOf(node, plan.revision), status: 'failed', ...prepared.entry });
  }
  if (rejected.length > 0) {
    // A node whose input cannot be built never runs, and nothing new starts after it.
    return dispatch(shape, { ...state, ledger: [...state.ledger, ...rejected] });
  }
  return { state: { ...state, running: [...state.running, ...started] }, commands };
}

type Prepared =
  PerformCommand | { type: 'rejected'; entry: Partial<LedgerEntry> & { error: SerializedError } };

function prepare(
  shape: PlannerShape,
  node: PlanNode,
  outputs: ReadonlyMap<string, JsonValue>,
): Prepared {
  const reject = (error: CairnError, input?: JsonValue): Prepared => ({
    type: 'rejected',
    entry:
      input === undefined
        ? { error: serializeError(error) }
        : { input, error: serializeError(error) },
  });
  const capability = shape.capabilities.get(node.capability);
  if (capability === undefined) {
    return reject(
      new CairnError('TOOL_NOT_FOUND', `The planner has no capability "${node.capability}".`),
    );
  }
  const resolved = resolveRefs(node.input, outputs);
  if (!resolved.ok) return reject(new CairnError('REF_UNRESOLVED', resolved.message));
  const base = { type: 'perform' as const, id: nodeEffectId(node.id) };
  const { executable } = capability;
  if (isAgent(executable)) {
    const input =
      typeof resolved.value === 'string' ? resolved.value : JSON.stringify(resolved.value);
    return {
      ...base,
      effect: { kind: 'node', node: node.id, capability: node.capability, input },
      idempotent: true,
    };
  }
  const args = parseToolArgs(executable, resolved.value);
  if (!args.ok) return reject(new CairnError('TOOL_INPUT_INVALID', args.message), resolved.value);
  return {
    ...base,
    effect: { kind: 'node', node: node.id, capability: node.capability, input: resolved.value },
    ...toolCallPolicy(executable),
  };
}

function isAgentNode(shape: PlannerShape, node: PlanNode): boolean {
  const capability = shape.capabilities.get(node.capability);
  return capability !== undefined && isAgent(capability.executable);
}

function entryOf(
  node: PlanNode,
  revision: number,
): Pick<LedgerEntry, 'id' | 'capability' | 'revision'> {
  return { id: node.id, capability: node.capability, revision };
}

function afterNodes(
  shape: PlannerShape,
  state: PlannerState,
  effects: readonly SettledEffect[],
): PlannerStep {
  const plan = state.plan;
  if (plan === null) return askPlanner(shape, state);
  let usage = state.usage;
  const settled: LedgerEntry[] = [];
  const outcomes = new Map(effects.map((effect) => [effect.id, effect.outcome]));
  const outputs = completedOutputs(state);
  for (const node of plan.nodes) {
    const outcome = outcomes.get(nodeEffectId(node.id));
    if (outcome === undefined) continue;
    // The input it was dispatched with: its dependencies' outputs have not changed since.
    const prepared = prepare(shape, node, outputs);
    const entry =
      prepared.type === 'perform' && prepared.effect.input !== undefined
        ? { ...entryOf(node, plan.revision), input: prepared.effect.input }
        : entryOf(node, plan.revision);
    if (outcome.status === 'unknown') {
      // In flight at a crash, or abandoned past its timeout (`outcome.error` says so).
      const error = new CairnError(
        'OUTCOME_UNKNOWN',
        outcome.error === undefined
          ? 'It was in flight when the run was interrupted: it may or may not have taken effect.'
          : `${outcome.error.message} It may or may not have taken effect.`,
      );
      settled.push({ ...entry, status: 'unknown', error: serializeError(error) });
    } else if (outcome.status === 'error') {
      settled.push({ ...entry, status: 'failed', error: outcome.error });
    } else if (isAgentNode(shape, node)) {
      const value = outcome.value as unknown as AgentNodeValue;
      usage = addUsage(usage, value.child.usage);
      settled.push({ ...entry, status: 'completed', output: value.output, child: value.child });
    } else {
      settled.push({ ...entry, status: 'completed', output: outcome.value });
    }
  }
  const settledIds = new Set(settled.map((entry) => entry.id));
  return dispatch(shape, {
    ...state,
    usage,
    ledger: [...state.ledger, ...settled],
    running: state.running.filter((id) => !settledIds.has(id)),
  });
}

/** Replans the unfinished part while the budget lasts; then fails the run naming the first failed node. */
function afterFailures(
  shape: PlannerShape,
  state: PlannerState,
  failures: readonly LedgerEntry[],
): PlannerStep {
  const [first] = failures;
  if (state.plan === null || first === undefined) return dispatch(shape, state);
  if (state.replanCount < shape.maxReplans) {
    const request = replanMessage(state.plan, state.ledger, failures);
    return askPlanner(shape, {
      ...state,
      phase: 'planning',
      replanCount: state.replanCount + 1,
      conversation: [...state.conversation, { role: 'user', content: request }],
    });
  }
  const reason =
    first.error === undefined ? 'it failed' : `${first.error.code}: ${first.error.message}`;
  const budget =
    shape.maxReplans === 0
      ? 'replanning is off (maxReplans: 0)'
      : `all ${shape.maxReplans} replans are spent`;
  return fail(
    state,
    new NodeFailedError(
      first.id,
      first.capability,
      `Node "${first.id}" (${first.capability}) failed and ${budget}: ${reason}`,
      first.error === undefined ? undefined : deserializeError(first.error),
    ),
  );
}

function complete(state: PlannerState, outputs: ReadonlyMap<string, JsonValue>): PlannerStep {
  const plan = state.plan;
  if (plan === null)
    return fail(state, new CairnError('PLAN_INVALID', 'There is no plan to complete.'));
  if (plan.output !== undefined) {
    const resolved = resolveRefs(plan.output, outputs);
    if (!resolved.ok) {
      return fail(state, new CairnError('REF_UNRESOLVED', `The plan output: ${resolved.message}`));
    }
    return { state, commands: [{ type: 'complete', output: resolved.value }] };
  }
  const needed = new Set(plan.nodes.flatMap((node) => node.dependsOn));
  const output: { [key: string]: JsonValue } = {};
  for (const node of plan.nodes) {
    if (!needed.has(node.id)) output[node.id] = outputs.get(node.id) ?? null;
  }
  return { state, commands: [{ type: 'complete', output }] };
}
