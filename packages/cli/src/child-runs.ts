/**
 * The child runs of a run (a planner's agent nodes). The store lists runs by status, kind and name only, so
 * rather than reading every run the candidates come from the run itself: the child ids its history names, and
 * the ids its plan's nodes give their children.
 */
import { childRunId, planView, type RunEvent } from '@cairn/sdk';
import type { CairnClient, RunInfo } from '@cairn/worker';
import { runState } from './run-summary.js';

/** The children of `run`, in plan order, each with the node that ran it when the id says so. */
export async function childRuns(
  client: CairnClient,
  run: RunInfo,
  events: readonly RunEvent[],
): Promise<Array<{ nodeId: string | null; info: RunInfo }>> {
  const candidates: string[] = [];
  const add = (id: string) => {
    if (!candidates.includes(id)) candidates.push(id);
  };
  const plan = planView(runState(run.snapshot), run.runId);
  for (const node of plan?.nodes ?? []) {
    if (node.childRunId !== undefined) add(node.childRunId);
    else if (node.state === 'running' || node.state === 'unknown' || node.state === 'failed') {
      add(childRunId(run.runId, node.id));
    }
  }
  for (const event of events) {
    if (event.type === 'effect.settled' && event.childRunId !== undefined) add(event.childRunId);
  }
  const found = await Promise.all(candidates.map((id) => client.get(id)));
  const children: Array<{ nodeId: string | null; info: RunInfo }> = [];
  for (const info of found) {
    if (info?.parent?.runId !== run.runId) continue;
    const slash = info.runId.lastIndexOf('/');
    children.push({ nodeId: slash === -1 ? null : info.runId.slice(slash + 1), info });
  }
  return children;
}
