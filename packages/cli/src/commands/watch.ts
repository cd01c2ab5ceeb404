/** `cairn runs watch <runId>`: a run's events as they are written, one line each, until it ends. */
import type { CommandContext } from '../command-context.js';
import { exitCodes } from '../cli-errors.js';
import { renderEventLine } from '../render/event-line.js';

/**
 * Prints each event once, in order; `--json` prints each as a JSON line with its `seq`, so a script that was cut
 * off resumes with `--after <last seq>`. Ends with the run (exit 0), or on Ctrl-C (exit 130).
 */
export async function watchRun(
  context: CommandContext,
  { runId, after }: { runId: string; after: number },
): Promise<number> {
  const events = context.client.watch(runId, {
    after,
    ...(context.signal === undefined ? {} : { signal: context.signal }),
  });
  for await (const event of events) {
    if (context.json) context.printJson(event, { line: true });
    else context.print(renderEventLine(event, context.style));
  }
  return context.signal?.aborted === true ? exitCodes.interrupted : exitCodes.ok;
}
