import { planView, type PlanView, type RunStatus } from '@cairn/sdk';
import type { CairnClient, RunInfo } from '@cairn/worker';
import { hasEncryptedPayloads } from '../encrypted-view.js';
import { runState } from '../run-summary.js';

/**
 * A run as the list shows it: its record without the checkpoint and the output, which can be megabytes each
 * and which a row never shows; `encrypted` when its payloads are, and the server has no codec (each shows as
 * "(encrypted)").
 */
export type RunSummary = Omit<RunInfo, 'snapshot' | 'output'> & { encrypted: boolean };

/** A child run as its parent's page links it. */
export interface ChildRunView {
  runId: string;
  kind: string;
  name: string;
  status: RunStatus;
  /** The plan node that ran it. */
  node: string;
}

/**
 * A run as its page shows it: its record without the checkpoint, the plan of a planner, and its child runs;
 * `encrypted` as in `RunSummary`.
 */
export interface RunDetail extends Omit<RunInfo, 'snapshot'> {
  encrypted: boolean;
  /** The plan DAG of a planner run, a running node's child run only once the store has it; null for other runs. */
  plan: PlanView | null;
  children: ChildRunView[];
}

/** At most this many child runs are looked up for one page: each is one read of the store. */
const maxChildren = 100;

/** The list row of a run. */
export function runSummary(info: RunInfo): RunSummary {
  const { snapshot: _snapshot, output: _output, ...summary } = info;
  return { ...summary, encrypted: hasEncryptedPayloads(info) };
}

/** The page of a run: its plan read from its checkpoint, its child runs read from the store. */
export async function runDetail(client: CairnClient, info: RunInfo): Promise<RunDetail> {
  const { snapshot, ...record } = info;
  const plan = planView(runState(snapshot), info.runId) ?? null;
  const nodes = (plan?.nodes ?? []).flatMap((node) =>
    node.childRunId === undefined ? [] : [{ node: node.id, runId: node.childRunId }],
  );
  const found = (
    await Promise.all(
      nodes.slice(0, maxChildren).map(async ({ node, runId }) => {
        const child = await client.get(runId);
        return child === undefined
          ? []
          : [{ runId, kind: child.kind, name: child.name, status: child.status, node }];
      }),
    )
  ).flat();
  // A running node names the child an agent would run as: a tool node has none, and an agent's may not be
  // created yet. The page links it once the store has it.
  const children = new Set(found.map((child) => child.runId));
  for (const node of plan?.nodes ?? []) {
    if (
      node.state === 'running' &&
      node.childRunId !== undefined &&
      !children.has(node.childRunId)
    ) {
      delete node.childRunId;
    }
  }
  return { ...record, encrypted: hasEncryptedPayloads(info), plan, children: found };
}
