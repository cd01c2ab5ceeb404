/** `cairn runs cancel` and `cairn runs discard`: a client's cancel and discard, with their refusals as errors. */
import { CairnError, RunNotFoundError } from '@cairn/sdk';
import type { CommandContext } from '../command-context.js';
import { refuseEncryptedWrite } from '../encrypted-view.js';

/**
 * Cancels a run: at once when no live worker holds it, else its holder cancels it at its next heartbeat. A
 * run that already ended is refused with `RUN_ENDED`: nothing was cancelled, and a script should know.
 */
export async function cancelRun(
  context: CommandContext,
  { runId }: { runId: string },
): Promise<number> {
  // Cancelling records the run's error, which is encoded for a run whose payloads are.
  const info = await context.client.get(runId);
  if (info !== undefined) refuseEncryptedWrite(info, 'cancel');
  const result = await context.client.cancel(runId);
  if (result === 'finished') {
    const status = (await context.client.get(runId))?.status ?? 'deleted';
    throw new CairnError(
      'RUN_ENDED',
      `Run "${runId}" already ended ${status}: nothing to cancel.`,
      {
        data: { runId, status },
      },
    );
  }
  if (context.json) {
    context.printJson({ runId, cancel: result });
  } else if (result === 'cancelled') {
    context.print(`Cancelled run ${runId}.`);
  } else {
    const owner = (await context.client.get(runId))?.owner ?? 'its holder';
    context.print(
      `Cancel requested: run ${runId} is held by ${owner}, which cancels it at its next heartbeat.`,
    );
  }
  return 0;
}

/** Deletes a run with its child runs; `LEASE_HELD` while a live worker holds it. */
export async function discardRun(
  context: CommandContext,
  { runId }: { runId: string },
): Promise<number> {
  const existed = await context.client.discard(runId);
  if (!existed) throw new RunNotFoundError(runId);
  if (context.json) context.printJson({ runId, discarded: true });
  else context.print(`Discarded run ${runId} and its child runs.`);
  return 0;
}
