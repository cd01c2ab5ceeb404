/** `cairn runs timeline <runId>`: a run's history by attempt, with its plan and its child runs' timelines. */
import { planView, RunNotFoundError } from '@cairn/sdk';
import type { CairnClient, RunInfo } from '@cairn/worker';
import type { CommandContext } from '../command-context.js';
import { childRuns } from '../child-runs.js';
import { hasEncryptedPayloads } from '../encrypted-view.js';
import { buildTimeline, type RunTimeline } from '../render/timeline-model.js';
import { renderTimeline } from '../render/timeline-text.js';
import { runState } from '../run-summary.js';

/** How deep child runs are followed: a planner's agent node is one level; deeper nesting is cut off here. */
const maxDepth = 4;

/** Reads a run's timeline, and its children's, from the store. */
export async function readTimeline(
  client: CairnClient,
  info: RunInfo,
  depth = 0,
): Promise<RunTimeline> {
  const events = await client.events(info.runId);
  const children = depth >= maxDepth ? [] : await childRuns(client, info, events);
  return {
    runId: info.runId,
    kind: info.kind,
    name: info.name,
    status: info.status,
    createdAt: info.createdAt,
    updatedAt: info.updatedAt,
    encrypted: hasEncryptedPayloads(info),
    ...buildTimeline(events),
    events,
    plan: planView(runState(info.snapshot)) ?? null,
    children: await Promise.all(
      children.map(async ({ nodeId, info: child }) => ({
        nodeId,
        timeline: await readTimeline(client, child, depth + 1),
      })),
    ),
  };
}

export async function showTimeline(
  context: CommandContext,
  { runId }: { runId: string },
): Promise<number> {
  const info = await context.client.get(runId);
  if (info === undefined) throw new RunNotFoundError(runId);
  const timeline = await readTimeline(context.client, info);
  if (context.json) context.printJson({ timeline });
  else context.print(renderTimeline(timeline, context.style));
  return 0;
}
