/** `cairn runs show <runId>`: one run, with its holder, wait, input, output and child runs. */
import { RunNotFoundError } from '@cairn/sdk';
import type { CommandContext } from '../command-context.js';
import { childRuns } from '../child-runs.js';
import { renderRunDetail, type RunDetail } from '../render/run-detail.js';
import { runInput, runSummary } from '../run-summary.js';

export async function showRun(
  context: CommandContext,
  { runId }: { runId: string },
): Promise<number> {
  const { client } = context;
  const info = await client.get(runId);
  if (info === undefined) throw new RunNotFoundError(runId);
  const children = await childRuns(client, info, await client.events(runId));
  const detail: RunDetail = {
    ...runSummary(info),
    input: runInput(info.snapshot) ?? null,
    output: info.output ?? null,
    children: children.map(({ info: child }) => ({
      runId: child.runId,
      kind: child.kind,
      name: child.name,
      status: child.status,
    })),
  };
  if (context.json) context.printJson({ run: detail });
  else context.print(renderRunDetail(detail, context.style));
  return 0;
}
