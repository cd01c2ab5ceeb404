import { z } from 'zod';
import { heldCallSchema, type HeldCall } from '../approvals.js';
import type { SerializedError } from '../errors.js';
import type { JsonValue } from '../json.js';
import type { Usage } from '../model.js';
import { childRunId } from '../run-id.js';
import { jsonData } from './json-data.js';
import type { PlanNode } from './plan.js';

/** One message of the planning conversation (the system prompt is rebuilt, not stored). */
export interface PlanningMessage {
  role: 'user' | 'assistant';
  content: string;
}

/** The plan the run executes: frozen once the planning model's answer passed validation. */
export interface FrozenPlan {
  /** 0 for the first plan, one more for each replan. */
  revision: number;
  nodes: PlanNode[];
  /** What the run returns, with `$ref`s; absent for the outputs of the nodes nothing depends on. */
  output?: JsonValue;
}

/** What a child run reported when its node settled. */
export interface ChildReport {
  runId: string;
  kind: 'agent';
  /** Model calls the child made. */
  trips: number;
  /** The child's usage, counted once in the planner's total. */
  usage: Usage;
  /** Tool calls of the child that were in flight at a crash and answered as outcome unknown. */
  unknownToolCalls: string[];
}

/** One executed node: how it ended, with its output or error. */
export interface LedgerEntry {
  id: string;
  capability: string;
  /** The revision of the plan the node belonged to. */
  revision: number;
  /** `unknown`: a non-idempotent tool was in flight at a crash and was not run again. */
  status: 'completed' | 'failed' | 'unknown';
  /** The input it was dispatched with, references resolved (absent when they did not resolve). */
  input?: JsonValue;
  output?: JsonValue;
  error?: SerializedError;
  child?: ChildReport;
}

/** A planner run's state: everything its checkpoint holds. Pure JSON. */
export interface PlannerState {
  goal: string;
  /** `planning` while the planning model is being asked, `executing` while the plan's nodes run. */
  phase: 'planning' | 'executing';
  /** The planning conversation: the goal, every plan answered, every rejection and replan request. */
  conversation: PlanningMessage[];
  /** Invalid plans answered in the current planning round. */
  invalidPlans: number;
  plan: FrozenPlan | null;
  /** Executed nodes, in the order they settled. */
  ledger: LedgerEntry[];
  /** Planning calls and child runs, each counted once. */
  usage: Usage;
  /** Replans made so far; persisted so the budget survives a resume. */
  replanCount: number;
  /** Nodes dispatched and not settled yet, at most `maxParallel`. */
  running: string[];
  /**
   * How the run names its nodes' child runs: `reserved` (`childRunId`, where no caller's id can be) for runs
   * started since 0.2; absent in a run an earlier version started, whose children keep `${runId}/${nodeId}`
   * so one in flight across the upgrade is continued, not started again.
   */
  childRunIds?: 'reserved';
  /** Ready nodes the approval policy holds, with the decisions taken on them, until they start or fail. */
  awaiting?: HeldCall[];
}

const count = z.number().int().nonnegative();
const usage = z.object({
  inputTokens: count,
  outputTokens: count,
  totalTokens: count,
  cachedInputTokens: count.optional(),
});

const serializedError: z.ZodType<SerializedError> = z.lazy(() =>
  z.object({
    name: z.string(),
    code: z.string(),
    message: z.string(),
    retryable: z.boolean(),
    data: z.record(z.string(), z.json()).optional(),
    cause: serializedError.optional(),
  }),
) as z.ZodType<SerializedError>;

const planNode = z.object({
  id: z.string(),
  capability: z.string(),
  input: jsonData,
  dependsOn: z.array(z.string()),
});

/** Validates a stored planner state. */
export const plannerStateSchema = z.object({
  goal: z.string(),
  phase: z.enum(['planning', 'executing']),
  conversation: z.array(z.object({ role: z.enum(['user', 'assistant']), content: z.string() })),
  invalidPlans: count,
  plan: z
    .object({ revision: count, nodes: z.array(planNode), output: jsonData.optional() })
    .nullable(),
  ledger: z.array(
    z.object({
      id: z.string(),
      capability: z.string(),
      revision: count,
      status: z.enum(['completed', 'failed', 'unknown']),
      input: jsonData.optional(),
      output: jsonData.optional(),
      error: serializedError.optional(),
      child: z
        .object({
          runId: z.string(),
          kind: z.literal('agent'),
          trips: count,
          usage,
          unknownToolCalls: z.array(z.string()),
        })
        .optional(),
    }),
  ),
  usage,
  replanCount: count,
  running: z.array(z.string()),
  childRunIds: z.literal('reserved').optional(),
  awaiting: z.array(heldCallSchema).optional(),
}) as unknown as z.ZodType<PlannerState>;

/**
 * The id of the child run node `nodeId` of planner run `runId` runs an agent as: `childRunId`, or
 * `${runId}/${nodeId}` in a run an earlier version started (`PlannerState.childRunIds`).
 */
export function nodeChildRunId(
  state: Pick<PlannerState, 'childRunIds'>,
  runId: string,
  nodeId: string,
): string {
  return state.childRunIds === 'reserved' ? childRunId(runId, nodeId) : `${runId}/${nodeId}`;
}
