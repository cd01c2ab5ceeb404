import type { TracerProvider } from '@opentelemetry/api';
import { z } from 'zod';
import { AgentDriftError, CairnError } from '../errors.js';
import type { JsonObject, JsonValue } from '../json.js';
import {
  generateChecked,
  type Model,
  type ModelMessage,
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
import { checkRunId } from '../run-id.js';
import { structuralSignature } from '../signature.js';
import type { SignalReceipt } from '../store/waits.js';
import { executeTool, jsonSchemaOf, toolSpec, type AnyTool } from '../tool.js';
import { agentStateSchema, type AgentState } from './agent-state.js';
import {
  agentSignals,
  approvalMethods,
  signalStore,
  type ApprovalMethods,
} from './agent-signals.js';
import { agentInit, agentStep, checkStoredAgentEffect, type AgentShape } from './agent-step.js';
import type { AgentApprovalPolicy, ApprovalPolicy } from '../approvals.js';
import { agentTelemetry } from './agent-telemetry.js';
import { toolOutcomePart } from './tool-outcome.js';

/** What `defineAgent` takes. `Tools`: the tools, whose names and inputs type the approval rules. */
export interface AgentConfig<
  OutputSchema extends z.ZodType | undefined,
  Tools extends readonly AnyTool[] = readonly AnyTool[],
> {
  name: string;
  model: Model;
  tools?: Tools;
  /** The system prompt. Not part of the signature: editing it is not drift. */
  system?: string;
  /** Model calls a run may make before it fails with `MAX_TRIPS_EXCEEDED`. @defaultValue 10 */
  maxTrips?: number;
  /** The final answer must be JSON matching this schema; the model is sent its JSON Schema. */
  output?: OutputSchema;
  /** Bump it to mark a change the signature cannot see (say, a tool's behaviour). */
  version?: string | number;
  durable?: DurableOptions;
  /** Where spans go. @defaultValue the global tracer provider (a no-op until an OpenTelemetry SDK registers one) */
  tracerProvider?: TracerProvider;
  /** Retries of `retryable` model errors. @defaultValue 3 tries */
  modelRetry?: RetryPolicy;
  /**
   * Tool calls that wait for a person's decision before they run (`client.approve` / `client.reject`, or
   * `agent.approve` / `agent.reject`). Not part of the signature: a run decides each call once, under the
   * policy it met. Each tool's rule is typed by that tool's input: `{ refund: (args) => args.cents > 10_000 }`.
   */
  approval?: AgentApprovalPolicy<Tools[number]>;
}

/** The output type of an agent: the schema's output, or the final text. */
export type AgentOutput<OutputSchema> = OutputSchema extends z.ZodType
  ? z.output<OutputSchema>
  : string;

/** How an agent run ended. */
export interface AgentResult<Output> {
  runId: string;
  output: Output;
  /** Usage of every model call of the run, each counted once across crashes. */
  usage: Usage;
  /** Model calls made. */
  trips: number;
  /** The whole conversation, without the system prompt. */
  messages: ModelMessage[];
  /** True when the run continued from an earlier attempt's checkpoint (or had already ended). */
  resumed: boolean;
}

/** A durable agent: a pure step function plus the runtime that performs its effects. */
export interface Agent<Output = unknown> extends ApprovalMethods {
  readonly kind: 'agent';
  readonly name: string;
  /** Model name and provider, sorted tool names, maxTrips, whether output is set, and version. */
  readonly signature: string;
  /** The step function the runtime and workers run. */
  readonly definition: DurableDefinition<AgentState, string, Output>;
  /** The durable settings it was defined with; a worker applies those it does not set itself. */
  readonly durable: DurableOptions | undefined;
  /** The tracer provider it was defined with; a worker uses it unless it has its own. */
  readonly tracerProvider: TracerProvider | undefined;
  execute(input: string, options?: ExecuteOptions): Promise<AgentResult<Output>>;
  /** Continues a run from its last checkpoint; a finished run returns its stored end at once. */
  resume(runId: string, options?: ResumeOptions): Promise<AgentResult<Output>>;
  /** A user message the run adds to its conversation at its next trip boundary. */
  followUp(
    runId: string,
    content: string,
    options?: { idempotencyKey?: string },
  ): Promise<SignalReceipt>;
  /**
   * A user message that interrupts the current plan: it ends a wait (calls waiting for a decision are
   * answered as not approved) and is read before the next model call.
   */
  steer(
    runId: string,
    content: string,
    options?: { idempotencyKey?: string },
  ): Promise<SignalReceipt>;
}

/** Defines a durable agent. */
export function defineAgent<
  OutputSchema extends z.ZodType | undefined = undefined,
  const Tools extends readonly AnyTool[] = readonly AnyTool[],
>(config: AgentConfig<OutputSchema, Tools>): Agent<AgentOutput<OutputSchema>> {
  type Output = AgentOutput<OutputSchema>;
  const tools = new Map<string, AnyTool>();
  for (const tool of config.tools ?? []) {
    if (tools.has(tool.name)) {
      throw new CairnError(
        'INVALID_ARGUMENT',
        `Agent "${config.name}" has two tools named "${tool.name}".`,
      );
    }
    tools.set(tool.name, tool);
  }
  const maxTrips = config.maxTrips ?? 10;
  if (!Number.isInteger(maxTrips) || maxTrips < 1) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `maxTrips must be a positive integer, got ${maxTrips}.`,
    );
  }
  for (const name of Object.keys(config.approval?.tools ?? {})) {
    if (!tools.has(name)) {
      throw new CairnError(
        'INVALID_ARGUMENT',
        `Agent "${config.name}" has an approval rule for "${name}", which is not one of its tools.`,
      );
    }
  }
  const shape: AgentShape = {
    tools,
    maxTrips,
    output: config.output,
    modelRetry: config.modelRetry ?? { maxAttempts: 3 },
    // The typed rules are the runtime's: a rule left out is `undefined`, which holds nothing.
    approval: config.approval as ApprovalPolicy | undefined,
  };
  const signature = structuralSignature({
    kind: 'agent',
    name: config.name,
    model: { name: config.model.name, provider: config.model.provider },
    tools: [...tools.keys()].sort(),
    maxTrips,
    output: config.output !== undefined,
    version: config.version ?? null,
  });
  const toolSpecs = [...tools.values()].map(toolSpec);
  const responseSchema: JsonObject | undefined =
    config.output === undefined ? undefined : jsonSchemaOf(config.output);

  const definition: DurableDefinition<AgentState, string, Output> = {
    kind: 'agent',
    name: config.name,
    signature,
    init: (input) => agentInit(input),
    step: (state, event) => agentStep(shape, state, event),
    parseState: (state) => agentStateSchema.parse(state),
    parseOutput: (output) => output as Output,
    driftError: (runId, stored, current) => new AgentDriftError(runId, stored, current),
    checkStoredEffect: (effect, settled, state) =>
      checkStoredAgentEffect(shape, effect, settled, state),
    telemetry: agentTelemetry(config.name, config.model),
    // Follow-up and steer messages reach it at trip boundaries, not only when a wait ends.
    receivesSignals: true,
    streams: (effect: Effect) => effect.kind === 'model',
    streamOutcome: toolOutcomePart,
    perform: async (effect: Effect, context: EffectContext<AgentState>) => {
      if (effect.kind === 'model') return callModel(context);
      if (effect.kind === 'tool') return callTool(effect, context);
      throw new CairnError('INVALID_ARGUMENT', `Agents perform no "${effect.kind}" effects.`);
    },
  };

  async function callModel(context: EffectContext<AgentState>): Promise<JsonValue> {
    const { state } = context;
    const request: ModelRequest = {
      messages:
        config.system === undefined
          ? state.messages
          : [{ role: 'system', content: config.system }, ...state.messages],
      tools: toolSpecs,
      signal: context.signal,
    };
    if (responseSchema !== undefined) request.responseSchema = responseSchema;
    return generateChecked(config.model, request, context.stream);
  }

  async function callTool(effect: Effect, context: EffectContext<AgentState>): Promise<JsonValue> {
    const tool = tools.get(String(effect.tool));
    if (tool === undefined)
      throw new CairnError('TOOL_NOT_FOUND', `No tool named "${String(effect.tool)}".`);
    return executeTool(tool, effect.args ?? null, {
      runId: context.runId,
      toolCallId: String(effect.toolCallId),
      signal: context.signal,
    });
  }

  const runner = createRunner(definition, config.durable, config.tracerProvider);
  const toResult = (run: DurableRunResult<AgentState, Output>): AgentResult<Output> => ({
    runId: run.runId,
    output: run.output,
    usage: run.state.usage,
    trips: run.state.trips,
    messages: run.state.messages,
    resumed: run.resumed,
  });

  const store = () => signalStore('agent', config.name, config.durable?.store);
  const message =
    (name: string) =>
    (runId: string, content: string, options: { idempotencyKey?: string } = {}) =>
      store().signal(checkRunId(runId), { name, payload: { content }, ...options });

  return {
    kind: 'agent',
    name: config.name,
    signature,
    definition,
    durable: config.durable,
    tracerProvider: config.tracerProvider,
    execute: async (input, options) => toResult(await runner.execute(input, options)),
    resume: async (runId, options) => toResult(await runner.resume(runId, options)),
    ...approvalMethods(store),
    followUp: message(agentSignals.followUp),
    steer: message(agentSignals.steer),
  };
}
