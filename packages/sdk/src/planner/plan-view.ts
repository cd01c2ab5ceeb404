import type { JsonValue } from '../json.js';
import type { Usage } from '../model.js';
import { planLayers } from './plan-layers.js';
import {
  nodeChildRunId,
  plannerStateSchema,
  type LedgerEntry,
  type PlannerState,
} from './planner-state.js';

/**
 * Where one node of a planner's current plan is: `pending` on a dependency, `ready` to be dispatched,
 * `awaiting` an approval, `running`, or settled (`completed`, `failed`, `unknown`: a non-idempotent call was in
 * flight at a crash and was not run again).
 */
export type PlanNodeState =
  'pending' | 'ready' | 'awaiting' | 'running' | 'completed' | 'failed' | 'unknown';

/** One node of a plan as an operator reads it. */
export interface PlanNodeView {
  id: string;
  capability: string;
  dependsOn: string[];
  /** 0 for a node that depends on no node of this plan, else one more than its deepest such dependency. */
  layer: number;
  state: PlanNodeState;
  /**
   * The child run of an agent node: the one it ran, once settled; for a running node, when `planView` was
   * given the run's id, the id its child run has if its capability is an agent (the state does not say which
   * capabilities are, so a caller looks the id up).
   */
  childRunId?: string;
  /** The error code of a node that did not complete. */
  code?: string;
}

/** A planner run's current plan, its nodes in plan order. */
export interface PlanView {
  phase: PlannerState['phase'];
  /** 0 for the first plan, one more per replan; null while no plan is frozen yet (then `nodes` is empty). */
  revision: number | null;
  /** Replans made so far. */
  replans: number;
  /** The planner's usage: its planning calls and its child runs, each counted once. */
  usage: Usage;
  nodes: PlanNodeView[];
}

/**
 * The plan of a planner run and where each of its nodes is, read from the state its checkpoint holds
 * (`snapshot.state`); undefined, never a throw, when that is not a planner's state. A node's own state comes
 * from the ledger entries of the current revision only: an entry of an earlier plan under the same id was
 * another node. Given `runId`, running nodes name the child run an agent node runs as. Read-only: it is for
 * tools that show a run (`cairn runs timeline`, `cairn ui`), never for the runtime.
 */
export function planView(state: JsonValue | undefined, runId?: string): PlanView | undefined {
  const parsed = plannerStateSchema.safeParse(state);
  if (!parsed.success) return undefined;
  const { plan, ledger, running, awaiting = [], phase, replanCount, usage } = parsed.data;
  const view = { phase, replans: replanCount, usage };
  if (plan === null) return { ...view, revision: null, nodes: [] };

  const current = new Map<string, LedgerEntry>();
  // A new plan may depend on a completed node of an earlier one.
  const completedBefore = new Set<string>();
  for (const entry of ledger) {
    if (entry.revision === plan.revision) current.set(entry.id, entry);
    else if (entry.status === 'completed') completedBefore.add(entry.id);
  }
  const inPlan = new Set(plan.nodes.map((node) => node.id));
  const completed = (id: string) =>
    inPlan.has(id) ? current.get(id)?.status === 'completed' : completedBefore.has(id);
  const layers = planLayers(plan.nodes);
  const nodes = plan.nodes.map((node): PlanNodeView => {
    const nodeView: PlanNodeView = {
      id: node.id,
      capability: node.capability,
      dependsOn: [...node.dependsOn],
      layer: layers.get(node.id) ?? 0,
      state: 'pending',
    };
    const entry = current.get(node.id);
    if (entry !== undefined) {
      nodeView.state = entry.status;
      if (entry.child !== undefined) nodeView.childRunId = entry.child.runId;
      if (entry.error !== undefined) nodeView.code = entry.error.code;
    } else if (running.includes(node.id)) {
      nodeView.state = 'running';
      if (runId !== undefined) nodeView.childRunId = nodeChildRunId(parsed.data, runId, node.id);
    } else if (awaiting.some((call) => call.callId === node.id)) {
      nodeView.state = 'awaiting';
    } else if (node.dependsOn.every(completed)) {
      nodeView.state = 'ready';
    }
    return nodeView;
  });
  return { ...view, revision: plan.revision, nodes };
}
