import type { TracerProvider } from '@opentelemetry/api';
import { CairnError, PlannerDriftError } from '../errors.js';
import type { JsonObject, JsonValue } from '../json.js';
import {
  generateChecked,
  modelAnswerProblem,
  type Model,
  type ModelRequest,
  type Usage,
} from '../model.js';
import type { DurableRunResult } from '../runtime/run-durable.js';
import {
  createRunner,
  type DurableOptions,
  type ExecuteOptions,
  type ResumeOptions,
} from '../runtime/runner.js';
import type {
  DurableDefinition,
  Effect,
  EffectContext,
  RetryPolicy,
} from '../runtime/step-function.js';
import { structuralSignature } from '../signature.js';
import { executeTool } from '../tool.js';
import { isAgent, type Capability } from './capability.js';
import { nodeIdPattern, planJsonSchema, type PlanNode } from './plan.js';
import { plannerSystemPrompt } from './planner-prompt.js';
import { approvalMethods, signalStore, type ApprovalMethods } from '../agent/agent-signals.js';
import type { ApprovalPolicy, CapabilityApprovalRules } from '../approvals.js';
import { plannerTelemetry } from './planner-telemetry.js';
import {
  nodeChildRunId,
  plannerStateSchema,
  type LedgerEntry,
  type PlannerState,
} from './planner-state.js';
import { planLimits } from './plan-limits.js';
import type { AgentNodeValue } from './planner-nodes.js';
import { plannerInit, plannerStep, type PlannerShape } from './planner-step.js';

/** What `definePlanner` takes. `Caps`: the capabilities, whose names and inputs type the approval rules. */
export interface PlannerConfig<Caps extends readonly Capability[] = readonly Capability[]> {
  name: string;
  /** The planning model. Not part of the signature: a frozen plan does not depend on who wrote it. */
  model: Model;
  /** What plan nodes may dispatch, in the order the planning model is shown them. */
  capabilities: Caps;
  /** Appended to the planning model's system prompt. Not part of the signature. */
  instructions?: string;
  /** Nodes run at once, at most. @defaultValue 4 */
  maxParallel?: number;
  /** Replans after failed nodes before the run fails with `NODE_FAILED`. @defaultValue 2 */
  maxReplans?: number;
  /** Planning answers in a row that may be invalid before the run fails with `PLAN_INVALID`. @defaultValue 3 */
  maxPlanAttempts?: number;
  /**
   * Nodes a plan may have; a plan with more fails the run with `PLAN_INVALID` before any node runs.
   * @defaultValue planLimits.maxNodes (10,000)
   */
  maxPlanNodes?: number;
  /** Bump it to mark a change the signature cannot see (say, a capability's behaviour). */
  version?: string | number;
  durable?: DurableOptions;
  /** Where spans go. @defaultValue the global tracer provider (a no-op until an OpenTelemetry SDK registers one) */
  tracerProvider?: TracerProvider;
  /**
   * Capabilities whose nodes wait for a person's decision on their input before they run, always (`true`) or
   * when a predicate of the input says so. Other ready nodes run meanwhile; the run waits, holding nothing, once
   * only held nodes are left. A rejected node fails with `TOOL_REJECTED` and the planner replans around it.
   * Not part of the signature. Each rule is typed by its capability's input (a tool's arguments, an agent's
   * task text).
   */
  approval?: Omit<ApprovalPolicy, 'tools'> & {
    capabilities: CapabilityApprovalRules<Caps[number]>;
  };
  /** Retries of `retryable` planning model errors. @defaultValue 3 tries */
  modelRetry?: RetryPolicy;
}

/** How a planner run ended. */
export interface PlannerResult {
  runId: string;
  /** The plan's `output` with its references resolved, or the outputs of the nodes nothing depends on. */
  output: JsonValue;
  /** Usage of every planning call and every child agent run, each counted once across crashes. */
  usage: Usage;
  /** The ledger: every node that ran, in the order it settled, with its output or error. */
  nodes: LedgerEntry[];
  /** The last frozen plan. */
  plan: PlanNode[];
  /** Replans the run made after failed nodes. */
  replanCount: number;
  /** True when the run continued from an earlier attempt's checkpoint (or had already ended). */
  resumed: boolean;
}

/** A durable planner: a pure step function over a frozen plan, plus the runtime that performs it. */
export interface Planner extends ApprovalMethods {
  readonly kind: 'planner';
  readonly name: string;
  /** Planner name, capability names and kinds in order, and version. */
  readonly signature: string;
  /** The step function the runtime and workers run. */
  readonly definition: DurableDefinition<PlannerState, string, JsonValue>;
  /** The durable settings it was defined with; a worker applies those it does not set itself. */
  readonly durable: DurableOptions | undefined;
  /** The tracer provider it was defined with; a worker uses it unless it has its own. */
  readonly tracerProvider: TracerProvider | undefined;
  execute(goal: string, options?: ExecuteOptions): Promise<PlannerResult>;
  /** Continues a run from its last checkpoint; a finished run returns its stored end at once. */
  resume(runId: string, options?: ResumeOptions): Promise<PlannerResult>;
}

const capabilityName = /^[A-Za-z0-9_-]{1,64}$/;

function positiveInteger(name: string, value: number, minimum: number): number {
  if (!Number.isInteger(value) || value < minimum) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `${name} must be an integer of at least ${minimum}, got ${value}.`,
    );
  }
  return value;
}

/**
 * Defines a durable planner. A run asks the planning model for a plan (a DAG of capability nodes), checks
 * it and asks again with the problems when it is invalid (a plan over `planLimits` fails the run at once),
 * freezes it, and starts each node as soon as its dependencies completed, up to `maxParallel` at once. The
 * journal records each node as it settles; a checkpoint follows every settled node of a small plan (up to
 * 16 nodes), else every (plan nodes + settled nodes) / 16 nodes, so a node costs the same in a plan of 10,000
 * as in one of 100. Agent
 * nodes run as child runs with their own checkpoints under `childRunId(runId, nodeId)`. A failed node triggers a
 * replan of the unfinished part.
 */
export function definePlanner<const Caps extends readonly Capability[] = readonly Capability[]>(
  config: PlannerConfig<Caps>,
): Planner {
  const capabilities = new Map<string, Capability>();
  for (const capability of config.capabilities) {
    if (!capabilityName.test(capability.name)) {
      throw new CairnError(
        'INVALID_ARGUMENT',
        `Capability name "${capability.name}" must be 1 to 64 letters, digits, "_" or "-".`,
      );
    }
    if (capabilities.has(capability.name)) {
      throw new CairnError(
        'INVALID_ARGUMENT',
        `Planner "${config.name}" has two capabilities named "${capability.name}".`,
      );
    }
    capabilities.set(capability.name, capability);
  }
  if (capabilities.size === 0) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `Planner "${config.name}" needs at least one capability.`,
    );
  }
  const shape: PlannerShape = {
    capabilities,
    maxParallel: positiveInteger('maxParallel', config.maxParallel ?? 4, 1),
    maxReplans: positiveInteger('maxReplans', config.maxReplans ?? 2, 0),
    maxPlanAttempts: positiveInteger('maxPlanAttempts', config.maxPlanAttempts ?? 3, 1),
    maxPlanNodes: positiveInteger('maxPlanNodes', config.maxPlanNodes ?? planLimits.maxNodes, 1),
    modelRetry: config.modelRetry ?? { maxAttempts: 3 },
    approval: plannerApproval(
      config.name,
      config.capabilities,
      config.approval as PlannerConfig['approval'],
    ),
  };
  const signature = structuralSignature({
    kind: 'planner',
    name: config.name,
    capabilities: config.capabilities.map((capability) => ({
      name: capability.name,
      kind: isAgent(capability.executable) ? 'agent' : 'tool',
    })),
    version: config.version ?? null,
  });
  const system = plannerSystemPrompt(
    config.capabilities,
    shape.maxParallel,
    shape.maxPlanNodes,
    config.instructions,
  );
  const responseSchema: JsonObject = planJsonSchema([...capabilities.keys()]);

  const definition: DurableDefinition<PlannerState, string, JsonValue> = {
    kind: 'planner',
    name: config.name,
    signature,
    init: (goal) => plannerInit(goal),
    step: (state, event) => plannerStep(shape, state, event),
    parseState: (state) => plannerStateSchema.parse(state),
    parseOutput: (output) => output,
    driftError: (runId, stored, current) => new PlannerDriftError(runId, stored, current),
    checkStoredEffect: checkStoredPlannerEffect,
    // Each node is handed to the step as it settles, so the next ready one starts at once.
    stepping: 'each',
    telemetry: plannerTelemetry(
      config.name,
      config.model,
      new Set(config.capabilities.filter((c) => isAgent(c.executable)).map((c) => c.name)),
    ),
    streams: (effect: Effect) => effect.kind === 'plan',
    perform: async (effect: Effect, context: EffectContext<PlannerState>) => {
      if (effect.kind === 'plan') return askModel(context);
      if (effect.kind === 'node') return runNode(effect, context);
      throw new CairnError('INVALID_ARGUMENT', `Planners perform no "${effect.kind}" effects.`);
    },
  };

  async function askModel(context: EffectContext<PlannerState>): Promise<JsonValue> {
    const request: ModelRequest = {
      messages: [{ role: 'system', content: system }, ...context.state.conversation],
      tools: [],
      responseSchema,
      signal: context.signal,
    };
    return generateChecked(config.model, request, context.stream);
  }

  async function runNode(effect: Effect, context: EffectContext<PlannerState>): Promise<JsonValue> {
    const nodeId = String(effect.node);
    const capability = capabilities.get(String(effect.capability));
    if (capability === undefined || !nodeIdPattern.test(nodeId)) {
      throw new CairnError(
        'TOOL_NOT_FOUND',
        `The planner has no capability "${String(effect.capability)}".`,
      );
    }
    const { executable } = capability;
    if (isAgent(executable)) {
      const childId = nodeChildRunId(context.state, context.runId, nodeId);
      // An agent's input is text: a node input that is not a string is handed over as JSON.
      const input =
        typeof effect.input === 'string' ? effect.input : JSON.stringify(effect.input ?? null);
      const child = await context.runChild(executable.definition, input, childId);
      const value: AgentNodeValue = {
        output: (child.output ?? null) as JsonValue,
        child: {
          runId: child.runId,
          kind: 'agent',
          trips: child.state.trips,
          usage: child.state.usage,
          unknownToolCalls: child.state.messages.flatMap((message) =>
            message.role === 'tool' && message.outcome === 'unknown' ? [message.toolCallId] : [],
          ),
        },
      };
      return value as unknown as JsonValue;
    }
    return executeTool(executable, effect.input ?? null, {
      runId: context.runId,
      toolCallId: nodeId,
      signal: context.signal,
    });
  }

  const runner = createRunner(definition, config.durable, config.tracerProvider);
  const toResult = (run: DurableRunResult<PlannerState, JsonValue>): PlannerResult => ({
    runId: run.runId,
    output: run.output,
    usage: run.state.usage,
    nodes: run.state.ledger,
    plan: run.state.plan?.nodes ?? [],
    replanCount: run.state.replanCount,
    resumed: run.resumed,
  });

  return {
    kind: 'planner',
    name: config.name,
    signature,
    definition,
    durable: config.durable,
    tracerProvider: config.tracerProvider,
    execute: async (goal, options) => toResult(await runner.execute(goal, options)),
    resume: async (runId, options) => toResult(await runner.resume(runId, options)),
    ...approvalMethods(() => signalStore('planner', config.name, config.durable?.store)),
  };
}

/** What a planner's `checkStoredEffect` says of an effect read back from a store (see `DurableDefinition`). */
function checkStoredPlannerEffect(
  effect: Effect,
  settled?: { value: JsonValue },
): string | undefined {
  if (effect.kind === 'plan')
    return settled === undefined ? undefined : modelAnswerProblem(settled.value);
  if (effect.kind === 'node') {
    return typeof effect.node === 'string' && typeof effect.capability === 'string'
      ? undefined
      : 'is a node without its id or capability';
  }
  return `is of a kind planners never perform (${JSON.stringify(effect.kind)})`;
}

/** The planner's approval policy in the shape agents and planners share, its capability names checked. */
function plannerApproval(
  planner: string,
  known: readonly Capability[],
  approval: PlannerConfig['approval'] | undefined,
): ApprovalPolicy | undefined {
  if (approval === undefined) return undefined;
  const { capabilities, ...rest } = approval;
  for (const name of Object.keys(capabilities)) {
    if (!known.some((capability) => capability.name === name)) {
      throw new CairnError(
        'INVALID_ARGUMENT',
        `Planner "${planner}" has an approval rule for "${name}", which is not one of its capabilities.`,
      );
    }
  }
  // The typed rules are the runtime's: a rule left out is `undefined`, which holds nothing.
  return { ...rest, tools: capabilities as ApprovalPolicy['tools'] };
}
