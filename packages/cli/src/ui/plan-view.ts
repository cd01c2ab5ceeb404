import { childRunId, type JsonValue } from '@cairn/sdk';

/** Where a node of a planner's current plan is, as the page draws it. */
export type PlanNodeState =
  'pending' | 'ready' | 'awaiting' | 'running' | 'completed' | 'failed' | 'unknown';

/** One node of the plan DAG. */
export interface PlanNodeView {
  id: string;
  capability: string;
  dependsOn: string[];
  /** 0 for a node that depends on nothing, else one more than its deepest dependency. */
  layer: number;
  state: PlanNodeState;
  /** The error code of a failed node, or why its outcome is unknown. */
  code?: string;
  /** The child run the node ran or runs (an agent capability), when the state says which. */
  childRunId?: string;
}

/** A planner run's plan as the page shows it: its nodes in layers, with their states. */
export interface PlanView {
  phase: 'planning' | 'executing';
  /** 0 for the first plan, one more per replan; null while no plan is frozen yet. */
  revision: number | null;
  replans: number;
  /** The planner's usage: its planning calls and its child runs, each counted once. */
  usage: { inputTokens: number; outputTokens: number } | null;
  nodes: PlanNodeView[];
}

type JsonObject = { [key: string]: JsonValue };

function object(value: JsonValue | undefined): JsonObject | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : undefined;
}

function strings(value: JsonValue | undefined): string[] {
  return Array.isArray(value) ? value.filter((item) => typeof item === 'string') : [];
}

function text(value: JsonValue | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * The plan of a planner run, read from its checkpoint (`snapshot.state`, a `PlannerState`), or undefined when
 * the snapshot holds no planner state. It reads the JSON defensively rather than through the sdk's schema: a
 * checkpoint written by another version must still show what it can, not fail the page.
 */
export function planView(runId: string, snapshot: JsonValue | null): PlanView | undefined {
  const state = object(object(snapshot ?? undefined)?.state);
  const phase = state?.phase;
  if (state === undefined || (phase !== 'planning' && phase !== 'executing')) return undefined;
  const plan = object(state.plan);
  const revision = typeof plan?.revision === 'number' ? plan.revision : null;
  const replans = typeof state.replanCount === 'number' ? state.replanCount : 0;
  const rawNodes = Array.isArray(plan?.nodes) ? plan.nodes.map(object) : [];
  const nodes = rawNodes.flatMap((node) => {
    const id = text(node?.id);
    return id === undefined
      ? []
      : [{ id, capability: text(node?.capability) ?? '', dependsOn: strings(node?.dependsOn) }];
  });

  // The ledger keeps nodes of earlier revisions too; only this plan's entries say where its nodes are.
  const settled = new Map<string, JsonObject>();
  for (const entry of Array.isArray(state.ledger) ? state.ledger.map(object) : []) {
    const id = text(entry?.id);
    if (entry !== undefined && id !== undefined && entry.revision === revision) {
      settled.set(id, entry);
    }
  }
  const running = new Set(strings(state.running));
  const awaiting = new Set(
    (Array.isArray(state.awaiting) ? state.awaiting.map(object) : []).flatMap((held) => {
      const id = text(held?.callId);
      return id === undefined ? [] : [id];
    }),
  );
  // Runs started before 0.2 name their children `${runId}/${nodeId}` (`PlannerState.childRunIds`).
  const childOf = (nodeId: string) =>
    state.childRunIds === 'reserved' ? childRunId(runId, nodeId) : `${runId}/${nodeId}`;

  const layers = planLayers(nodes);
  const views = nodes.map((node): PlanNodeView => {
    const entry = settled.get(node.id);
    const view: PlanNodeView = { ...node, layer: layers.get(node.id) ?? 0, state: 'pending' };
    if (entry !== undefined) {
      const status = entry.status;
      view.state = status === 'completed' || status === 'failed' ? status : 'unknown';
      const code = text(object(entry.error)?.code);
      if (code !== undefined) view.code = code;
      const child = text(object(entry.child)?.runId);
      if (child !== undefined) view.childRunId = child;
    } else if (running.has(node.id)) {
      view.state = 'running';
      view.childRunId = childOf(node.id);
    } else if (awaiting.has(node.id)) {
      view.state = 'awaiting';
    } else if (node.dependsOn.every((id) => settled.get(id)?.status === 'completed')) {
      view.state = 'ready';
    }
    return view;
  });
  const usage = object(state.usage);
  const tokens =
    typeof usage?.inputTokens === 'number' && typeof usage.outputTokens === 'number'
      ? { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens }
      : null;
  return { phase, revision, replans, usage: tokens, nodes: views };
}

/**
 * Each node's layer: the length of the longest dependency chain under it. A dependency the plan lacks is left
 * out, and a cycle (which a frozen plan never has) is cut where it closes, so any JSON gets a layout.
 */
export function planLayers(
  nodes: readonly { id: string; dependsOn: readonly string[] }[],
): Map<string, number> {
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const layers = new Map<string, number>();
  const visiting = new Set<string>();
  // Iterative depth-first walk: a plan may be thousands of nodes deep, more than the call stack allows.
  for (const root of nodes) {
    const stack: { id: string; next: number }[] = [{ id: root.id, next: 0 }];
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      if (layers.has(top.id)) {
        stack.pop();
        continue;
      }
      visiting.add(top.id);
      const dependencies = byId.get(top.id)?.dependsOn ?? [];
      const dependency = dependencies[top.next];
      if (dependency !== undefined) {
        top.next += 1;
        if (byId.has(dependency) && !layers.has(dependency) && !visiting.has(dependency)) {
          stack.push({ id: dependency, next: 0 });
        }
        continue;
      }
      let layer = 0;
      for (const id of dependencies) layer = Math.max(layer, (layers.get(id) ?? -1) + 1);
      layers.set(top.id, layer);
      visiting.delete(top.id);
      stack.pop();
    }
  }
  return layers;
}
