import type { JsonValue } from '../json.js';
import type { PlanNode } from './plan.js';
import type { FrozenPlan, LedgerEntry, PlannerState } from './planner-state.js';

/**
 * Settled nodes between two checkpoints of an executing plan, at most: 1 while the plan and its ledger hold
 * fewer than 32 nodes together, then one 16th of them. A checkpoint writes the whole state, which grows with
 * the plan, so writing one every `stride` nodes keeps the cost per node flat; the nodes that settle between
 * two checkpoints are in the journal, which a checkpoint supersedes.
 */
export function checkpointStride(planNodes: number, ledgerEntries: number): number {
  return Math.max(1, Math.floor((planNodes + ledgerEntries) / 16));
}

/** Whether the ledger growing from `before` to `after` entries crossed a checkpoint of the stride. */
export function checkpointDue(planNodes: number, before: number, after: number): boolean {
  const stride = checkpointStride(planNodes, after);
  return Math.floor(after / stride) > Math.floor(before / stride);
}

/** A binary min-heap of plan positions: the ready nodes, handed out in plan order. */
class PositionHeap {
  private readonly items: number[] = [];

  get size(): number {
    return this.items.length;
  }

  push(position: number): void {
    const items = this.items;
    items.push(position);
    for (let at = items.length - 1; at > 0;) {
      const parent = (at - 1) >> 1;
      if (items[parent]! <= position) break;
      items[at] = items[parent]!;
      items[parent] = position;
      at = parent;
    }
  }

  pop(): number | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    items[0] = last;
    for (let at = 0; ;) {
      const left = 2 * at + 1;
      const right = left + 1;
      let least = at;
      if (left < items.length && items[left]! < items[least]!) least = left;
      if (right < items.length && items[right]! < items[least]!) least = right;
      if (least === at) break;
      items[at] = items[least]!;
      items[least] = last;
      at = least;
    }
    return top;
  }
}

/**
 * What the planner step asks of a plan at every settled node (which nodes are ready, the outputs so far,
 * the failures of the current plan, how many nodes are left), kept up to date as the ledger grows instead of
 * recomputed from the whole plan and ledger: the step's cost per node does not grow with the plan.
 *
 * It is a function of the plan, the ledger and the nodes running when it was built: the step keeps it for the
 * state it returns, and one that does not follow from it is built again, so the step stays a pure function.
 */
export class PlanProgress {
  /** Outputs of every completed node, of this plan and of earlier ones. */
  readonly outputs = new Map<string, JsonValue>();
  /** Entries of this plan's revision that did not complete. */
  readonly failures: LedgerEntry[] = [];
  private readonly positions = new Map<string, number>();
  private readonly dependents = new Map<string, number[]>();
  /** Per position: dependencies without an output yet. */
  private readonly waiting: number[];
  private readonly ran = new Set<string>();
  /** Nodes whose dependencies completed, that did not run and were not handed out. */
  private readonly ready = new PositionHeap();
  private remainingNodes: number;
  private ledger: readonly LedgerEntry[] = [];

  constructor(
    readonly plan: FrozenPlan,
    state: Pick<PlannerState, 'ledger' | 'running'>,
  ) {
    const { nodes } = plan;
    this.remainingNodes = nodes.length;
    for (const [at, node] of nodes.entries()) this.positions.set(node.id, at);
    for (const entry of state.ledger) this.record(entry);
    this.ledger = state.ledger;
    const running = new Set(state.running);
    this.waiting = nodes.map((node, at) => {
      const dependencies = new Set(node.dependsOn);
      for (const dependency of dependencies) {
        const dependents = this.dependents.get(dependency);
        if (dependents === undefined) this.dependents.set(dependency, [at]);
        else dependents.push(at);
      }
      const waiting = [...dependencies].filter((id) => !this.outputs.has(id)).length;
      if (waiting === 0 && !this.ran.has(node.id) && !running.has(node.id)) this.ready.push(at);
      return waiting;
    });
  }

  /** Nodes of the plan that have not settled. */
  get remaining(): number {
    return this.remainingNodes;
  }

  /** Where a node of the plan is in it (-1 for an id it does not have). */
  position(id: string): number {
    return this.positions.get(id) ?? -1;
  }

  /** The plan's node of this id, if it has one. */
  node(id: string): PlanNode | undefined {
    const at = this.positions.get(id);
    return at === undefined ? undefined : this.plan.nodes[at];
  }

  /** Ids of the nodes that have not settled, in plan order. */
  remainingIds(): string[] {
    return this.plan.nodes.filter((node) => !this.ran.has(node.id)).map((node) => node.id);
  }

  /**
   * Follows a ledger that extends the one it knows by entries appended since. False when it does not (another
   * plan, or a ledger that is not a continuation): then it must be built again.
   */
  follow(plan: FrozenPlan, ledger: readonly LedgerEntry[]): boolean {
    if (plan !== this.plan) return false;
    const known = this.ledger.length;
    if (ledger.length < known || (known > 0 && ledger[known - 1] !== this.ledger[known - 1])) {
      return false;
    }
    for (let at = known; at < ledger.length; at += 1) this.record(ledger[at]!);
    this.ledger = ledger;
    return true;
  }

  /** Hands out up to `count` ready nodes, in plan order; each is then running, or settled at once. */
  take(count: number): PlanNode[] {
    const taken: PlanNode[] = [];
    while (taken.length < count) {
      const at = this.ready.pop();
      if (at === undefined) break;
      const node = this.plan.nodes[at]!;
      if (!this.ran.has(node.id)) taken.push(node);
    }
    return taken;
  }

  /** Gives back nodes `take` handed out that did not start after all. */
  giveBack(nodes: readonly PlanNode[]): void {
    for (const node of nodes) this.ready.push(this.positions.get(node.id)!);
  }

  private record(entry: LedgerEntry): void {
    if (this.positions.has(entry.id) && !this.ran.has(entry.id)) this.remainingNodes -= 1;
    this.ran.add(entry.id);
    if (entry.revision === this.plan.revision && entry.status !== 'completed') {
      this.failures.push(entry);
    }
    if (entry.status !== 'completed') return;
    this.outputs.set(entry.id, entry.output ?? null);
    // The constructor records the ledger before it knows any dependents: it counts `waiting` from `outputs`.
    for (const at of this.dependents.get(entry.id) ?? []) {
      this.waiting[at]! -= 1;
      if (this.waiting[at] === 0 && !this.ran.has(this.plan.nodes[at]!.id)) this.ready.push(at);
    }
  }
}

/** The progress of each state a step returned, for the next step from it. */
const progressOfState = new WeakMap<PlannerState, PlanProgress>();

/** Takes the progress kept for a state: the next step from it owns it (a second one builds its own). */
export function takeProgress(state: PlannerState): PlanProgress | undefined {
  const progress = progressOfState.get(state);
  progressOfState.delete(state);
  return progress;
}

/** Keeps the progress for the state a step returns, when it describes that state. */
export function keepProgress(state: PlannerState, progress: PlanProgress | undefined): void {
  if (progress !== undefined && state.plan !== null && progress.follow(state.plan, state.ledger)) {
    progressOfState.set(state, progress);
  }
}

/** The progress of an executing state: `known` brought up to date when it can be, else built. */
export function progressOf(
  state: PlannerState & { plan: FrozenPlan },
  known: PlanProgress | undefined,
): PlanProgress {
  return known !== undefined && known.follow(state.plan, state.ledger)
    ? known
    : new PlanProgress(state.plan, state);
}
