/** `cairn runs list`: the runs matching a filter, oldest first. */
import type { RunFilter } from '@cairn/sdk';
import type { CommandContext } from '../command-context.js';
import type { ListQuery } from '../parse-args.js';
import { renderRunTable } from '../render/run-list.js';
import { runSummary } from '../run-summary.js';

export async function listRuns(
  context: CommandContext,
  { query }: { query: ListQuery },
): Promise<number> {
  const filter: RunFilter = {
    ...(query.status === undefined ? {} : { status: query.status }),
    ...(query.kind === undefined ? {} : { kind: query.kind }),
    ...(query.name === undefined ? {} : { name: query.name }),
    ...(query.limit === undefined ? {} : { limit: query.limit }),
  };
  const runs = (await context.client.list(filter)).map(runSummary);
  if (context.json) context.printJson({ runs });
  else context.print(renderRunTable(runs, context.style));
  return 0;
}
