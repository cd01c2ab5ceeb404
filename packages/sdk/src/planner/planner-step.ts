import { decideHeldCalls, type ApprovalPolicy, type HeldCall } from '../approvals.js';
import { CairnError, deserializeError, NodeFailedError, serializeError } from '../errors.js';
import type { JsonValue } from '../json.js';
import { addUsage, modelCallFailed, zeroUsage, type CheckedModelResponse } from '../model.js';
import type {
  Command,
  PerformCommand,
  RetryPolicy,
  SettledEffect,
  StepEvent,
  StepResult,
} from '../runtime/step-function.js';
import type { EffectOutcome } from '../store/contract.js';
import { parseToolArgs } from '../tool.js';
import { isAgent, type Capability } from './capability.js';
import { validatePlan, type PlanNode } from './plan.js';
import {
  checkpointDue,
  keepProgress,
  progressOf,
  takeProgress,
  type PlanProgress,
} from './plan-progress.js';
import { gateNode, waitForDecisions } from './planner-approvals.js';
import { entryOf, nodeEffectId, prepare, settledEntry } from './planner-nodes.js';
import { goalMessage, rejectionMessage, replanMessage } from './planner-prompt.js';
import type { FrozenPlan, LedgerEntry, PlannerState } from './planner-state.js';
import { resolveRefs } from './refs.js';

/** The parts of a planner definition its step function depends on. */
export interface PlannerShape {
  capabilities: ReadonlyMap<string, Capability>;
  maxParallel: number;
  maxReplans: number;
  maxPlanAttempts: number;
  /** Nodes a plan may have. */
  maxPlanNodes: number;
  modelRetry: RetryPolicy;
  /** Capabilities whose nodes wait for a person's decision (`tools` names capabilities). */
  approval: ApprovalPolicy | undefined;
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
    childRunIds: 'reserved',
  };
}

/** The effect id of a planning call: one per call ever made in the run, so each is journaled apart. */
export function planEffectId(state: PlannerState): string {
  return `plan-${state.conversation.filter((message) => message.role === 'assistant').length}`;
}

/**
 * The planner as a pure step function: ask the planning model for a plan until one is valid, freeze it,
 * then run its nodes as their dependencies settle, up to `maxParallel` at once (the runtime hands it each
 * node as it settles). It checkpoints after every settled node of a small plan and every `checkpointStride`
 * nodes of a large one, and at every turn of the plan (frozen, failed, replanned, ended). After a failure it
 * starts nothing new, lets the running nodes settle, then replans the unfinished part. Its cost per settled
 * node does not grow with the plan: what it needs of the plan is kept up to date (see `PlanProgress`).
 */
export function plannerStep(
  shape: PlannerShape,
  state: PlannerState,
  event: StepEvent,
): PlannerStep {
  const step = new Step(shape, takeProgress(state));
  const result = step.run(state, event);
  keepProgress(result.state, step.progress);
  return result;
}

function fail(state: PlannerState, error: CairnError): PlannerStep {
  return { state, commands: [{ type: 'fail', error: serializeError(error) }] };
}

const checkpoint: Command = { type: 'checkpoint' };

/** One step: the definition's shape and the plan progress it brings up to date. */
class Step {
  /** The event's time: deadlines of held nodes are counted from it. */
  private now = 0;

  constructor(
    private readonly shape: PlannerShape,
    public progress: PlanProgress | undefined,
  ) {}

  run(state: PlannerState, event: StepEvent): PlannerStep {
    this.now = event.now;
    if (event.type === 'woken' || event.type === 'signals')
      return this.afterDecisions(state, event);
    if (event.type === 'start')
      return state.phase === 'planning' ? this.askPlanner(state) : this.dispatch(state, true);
    if (state.phase === 'planning') {
      const settled = event.effects.find((effect) => effect.id === planEffectId(state));
      return this.afterPlanning(state, settled?.outcome ?? { status: 'unknown' });
    }
    return this.afterNodes(state, event.effects);
  }

  /** A wait for decisions on held nodes ended: the decisions are taken, and ready nodes start again. */
  private afterDecisions(
    state: PlannerState,
    event: Extract<StepEvent, { type: 'woken' | 'signals' }>,
  ): PlannerStep {
    let awaiting: HeldCall[];
    try {
      awaiting = decideHeldCalls(state.awaiting ?? [], event.signals, {
        approval: this.shape.approval,
        now: event.now,
      });
    } catch (error) {
      return fail(state, error as CairnError);
    }
    return this.dispatch(withAwaiting(state, awaiting), true);
  }

  private progressOf(state: PlannerState & { plan: FrozenPlan }): PlanProgress {
    return (this.progress = progressOf(state, this.progress));
  }

  private askPlanner(state: PlannerState): PlannerStep {
    const command: PerformCommand = {
      type: 'perform',
      id: planEffectId(state),
      effect: { kind: 'plan' },
      idempotent: true,
      retry: this.shape.modelRetry,
    };
    return { state, commands: [checkpoint, command] };
  }

  private afterPlanning(state: PlannerState, outcome: EffectOutcome): PlannerStep {
    const { shape } = this;
    if (outcome.status !== 'ok') {
      const cause = outcome.status === 'error' ? outcome.error : undefined;
      return fail(state, modelCallFailed('The planning model call', cause));
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
      completed: new Set(
        state.ledger.filter((e) => e.status === 'completed').map((entry) => entry.id),
      ),
      failed: new Set(state.ledger.filter((e) => e.status !== 'completed').map((e) => e.id)),
      maxNodes: shape.maxPlanNodes,
    });
    if (!check.ok && check.breach !== undefined) {
      // Over a limit: no draft to correct, and nothing of it runs.
      return fail(
        { ...answered, invalidPlans: state.invalidPlans + 1 },
        new CairnError(
          'PLAN_INVALID',
          `The planning model's plan is over a limit: ${check.breach.message}`,
          { data: check.breach.data },
        ),
      );
    }
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
      return this.askPlanner({
        ...answered,
        invalidPlans,
        conversation: [...answered.conversation, { role: 'user', content: rejection }],
      });
    }
    const revision = state.plan === null ? 0 : state.plan.revision + 1;
    const { nodes, output } = check.plan;
    return this.dispatch(
      {
        ...answered,
        phase: 'executing',
        invalidPlans: 0,
        plan: output === undefined ? { revision, nodes } : { revision, nodes, output },
      },
      true,
    );
  }

  /**
   * Starts every ready node while fewer than `maxParallel` run, completes the run when every node settled,
   * or, after a failure of the current plan, waits for the running nodes and then replans. `checkpointed`:
   * whether the state is checkpointed before the nodes start.
   */
  private dispatch(state: PlannerState, checkpointed: boolean): PlannerStep {
    const plan = state.plan;
    if (plan === null) return this.askPlanner(state);
    const progress = this.progressOf({ ...state, plan });
    if (progress.failures.length > 0) {
      return state.running.length > 0
        ? { state, commands: [checkpoint] }
        : this.afterFailures(state, progress.failures);
    }
    if (progress.remaining === 0) return complete(state, progress.outputs);

    const settle = checkpointed ? [checkpoint] : [];
    const budget = Math.max(0, this.shape.maxParallel - state.running.length);
    const commands: Command[] = [...settle];
    const rejected: LedgerEntry[] = [];
    const started: PlanNode[] = [];
    // Ready nodes held for a decision do not run and take no slot: the nodes after them may.
    const held: PlanNode[] = [];
    let awaiting = state.awaiting ?? [];
    while (started.length < budget && rejected.length === 0) {
      const ready = progress.take(budget - started.length);
      if (ready.length === 0) break;
      for (const node of ready) {
        const prepared = prepare(this.shape.capabilities, node, progress.outputs);
        if (prepared.type !== 'perform') {
          rejected.push({ ...entryOf(node, plan.revision), status: 'failed', ...prepared.entry });
          continue;
        }
        const gate = gateNode(
          this.shape.approval,
          awaiting,
          node,
          prepared,
          ruleInputOf(this.shape.capabilities.get(node.capability), prepared),
          this.now,
        );
        awaiting = gate.awaiting;
        if (gate.verdict === 'hold') held.push(node);
        else if (gate.verdict === 'rejected') {
          const input = prepared.effect.input ?? null;
          rejected.push({
            ...entryOf(node, plan.revision),
            status: 'failed',
            input,
            error: gate.error,
          });
        } else {
          commands.push(prepared);
          started.push(node);
        }
      }
    }
    if (rejected.length > 0) {
      // A node whose input cannot be built (or that was not approved) never runs, and nothing new starts
      // after it: the failure is handled first.
      progress.giveBack([...started, ...held]);
      const ledger = [...state.ledger, ...rejected];
      return this.dispatch(withAwaiting({ ...state, ledger }, awaiting), true);
    }
    progress.giveBack(held);
    const next = withAwaiting(
      { ...state, running: [...state.running, ...started.map((node) => node.id)] },
      awaiting,
    );
    if (started.length > 0) return { state: next, commands };
    if (state.running.length > 0) return { state: next, commands: settle };
    if (held.length > 0) return { state: next, commands: [waitForDecisions(awaiting)] };
    return fail(
      state,
      new CairnError('PLAN_INVALID', `No node of plan revision ${plan.revision} can run.`, {
        data: { remaining: progress.remainingIds() },
      }),
    );
  }

  private afterNodes(state: PlannerState, effects: readonly SettledEffect[]): PlannerStep {
    const plan = state.plan;
    if (plan === null) return this.askPlanner(state);
    const progress = this.progressOf({ ...state, plan });
    let usage = state.usage;
    const nodes: Array<{ node: PlanNode; outcome: EffectOutcome }> = [];
    for (const effect of effects) {
      const node = effect.id.startsWith('node/')
        ? progress.node(effect.id.slice('node/'.length))
        : undefined;
      if (node !== undefined && effect.id === nodeEffectId(node.id)) {
        nodes.push({ node, outcome: effect.outcome });
      }
    }
    // Several at once settle in plan order.
    nodes.sort((a, b) => progress.position(a.node.id) - progress.position(b.node.id));
    const settled: LedgerEntry[] = [];
    for (const { node, outcome } of nodes) {
      const { capabilities } = this.shape;
      const { entry, usage: childUsage } = settledEntry(
        capabilities,
        node,
        plan.revision,
        outcome,
        progress.outputs,
      );
      if (childUsage !== undefined) usage = addUsage(usage, childUsage);
      settled.push(entry);
    }
    const settledIds = new Set(settled.map((entry) => entry.id));
    const ledger = [...state.ledger, ...settled];
    return this.dispatch(
      {
        ...state,
        usage,
        ledger,
        running: state.running.filter((id) => !settledIds.has(id)),
      },
      checkpointDue(plan.nodes.length, state.ledger.length, ledger.length),
    );
  }

  /** Replans the unfinished part while the budget lasts; then fails the run naming the first failed node. */
  private afterFailures(state: PlannerState, failures: readonly LedgerEntry[]): PlannerStep {
    const { shape } = this;
    const [first] = failures;
    if (state.plan === null || first === undefined) return this.dispatch(state, true);
    if (state.replanCount < shape.maxReplans) {
      const request = replanMessage(state.plan, state.ledger, failures);
      // Decisions asked for nodes of the plan being replaced are not needed any more.
      return this.askPlanner({
        ...withAwaiting(state, []),
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
}

/** The state with these held nodes (none: no `awaiting` field, as in states from before approvals). */
function withAwaiting(state: PlannerState, awaiting: readonly HeldCall[]): PlannerState {
  const { awaiting: _before, ...rest } = state;
  return awaiting.length === 0 ? rest : { ...rest, awaiting: [...awaiting] };
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
  // Defined, not assigned: every node id stays a key.
  const output = Object.fromEntries(
    plan.nodes
      .filter((node) => !needed.has(node.id))
      .map((node) => [node.id, outputs.get(node.id) ?? null]),
  ) as { [key: string]: JsonValue };
  return { state, commands: [{ type: 'complete', output }] };
}

/** What a capability's approval rule reads of a prepared node: a tool's parsed arguments, an agent's task. */
function ruleInputOf(capability: Capability | undefined, prepared: PerformCommand): unknown {
  const input = (prepared.effect.input ?? null) as JsonValue;
  if (capability === undefined || isAgent(capability.executable)) return input;
  const parsed = parseToolArgs(capability.executable, input);
  return parsed.ok ? parsed.args : input;
}
