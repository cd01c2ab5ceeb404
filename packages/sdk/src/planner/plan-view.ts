import type { JsonValue } from '../json.js';
import { plannerStateSchema, type PlannerState } from './planner-state.js';

/**
 * Where one node of a planner's current plan is: `waiting` for a dependency, `ready` to be dispatched,
 * `awaiting` an approval, `running`, or settled (`completed`, `failed`, `unknown`: a non-idempotent call was in
 * flight at a crash and was not run again).
 */
export type PlanNodeState =
  'waiting' | 'ready' | 'awaiting' | 'running' | 'completed' | 'failed' | 'unknown';

/** One node of a plan as an operator reads it. */
export interface PlanNodeView {
  id: string;
  capability: string;
  dependsOn: string[];
  state: PlanNodeState;
  /** The child run the node ran, for an agent node that settled. */
  childRunId?: string;
  /** The error code of a node that did not complete. */
  code?: string;
}

/** A planner run's current plan, its nodes in plan order. */
export interface PlanView {
  /** 0 for the first plan, one more per replan. */
  revision: number;
  phase: PlannerState['phase'];
  nodes: PlanNodeView[];
}

/**
 * The plan of a planner run and where each of its nodes is, read from the state its checkpoint holds
 * (`snapshot.state`); undefined when that is not a planner's state or no plan is frozen yet. Read-only: it is
 * for tools that show a run (`cairn runs timeline`), never for the runtime.
 */
export function planView(state: JsonValue | undefined): PlanView | undefined {
  const parsed = plannerStateSchema.safeParse(state);
  if (!parsed.success || parsed.data.plan === null) return undefined;
  const { plan, ledger, running, awaiting = [], phase } = parsed.data;
  // A node id may be settled under an earlier revision too (a replan keeps ids): the latest entry counts.
  const settled = new Map(ledger.map((entry) => [entry.id, entry]));
  const completed = new Set(
    ledger.filter((entry) => entry.status === 'completed').map((entry) => entry.id),
  );
  const nodes = plan.nodes.map((node): PlanNodeView => {
    const view: PlanNodeView = {
      id: node.id,
      capability: node.capability,
      dependsOn: [...node.dependsOn],
      state: 'waiting',
    };
    const entry = settled.get(node.id);
    if (entry !== undefined) {
      view.state = entry.status;
      if (entry.child !== undefined) view.childRunId = entry.child.runId;
      if (entry.error !== undefined) view.code = entry.error.code;
    } else if (running.includes(node.id)) {
      view.state = 'running';
    } else if (awaiting.some((call) => call.callId === node.id)) {
      view.state = 'awaiting';
    } else if (node.dependsOn.every((id) => completed.has(id))) {
      view.state = 'ready';
    }
    return view;
  });
  return { revision: plan.revision, phase, nodes };
}
