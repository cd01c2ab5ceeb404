import { CairnError, serializeError } from '../errors.js';
import type { JsonValue } from '../json.js';
import type { DurableStore, Lease, RunRecord } from '../store/contract.js';

/** Attempts in a row that may end before the run goes on, when nothing else is set. */
export const defaultMaxStalls = 5;

/**
 * Ends a run that cannot go on: status `dead_lettered` with `error` (why), keeping its checkpoint and journal for
 * inspection, and gives the lease back. Throws `error`.
 */
export async function deadLetter(
  store: DurableStore,
  lease: Lease,
  error: CairnError,
): Promise<never> {
  try {
    await store.updateStatus(lease, { status: 'dead_lettered', error: serializeError(error) });
  } finally {
    await store.release(lease).catch(() => undefined);
  }
  throw error;
}

/** Why a run whose holders kept dying is dead-lettered. */
export function tooManyRecoveries(
  runId: string,
  recoveries: number,
  maxRecoveries: number,
): CairnError {
  return new CairnError(
    'RUN_DEAD_LETTERED',
    `Run "${runId}" was dead-lettered: its holder died without releasing it ${recoveries} times ` +
      `(maxRecoveries ${maxRecoveries}). Its last checkpoint and journal are kept.`,
    { data: { runId, recoveries, maxRecoveries } },
  );
}

/** Why a run whose last attempts all ended before it could go on is dead-lettered, naming the last error. */
export function tooManyStalls(run: RunRecord, maxStalls: number): CairnError {
  const cause = run.error?.cause;
  const last =
    run.error === undefined
      ? ''
      : ` The last one: ${run.error.code}: ${run.error.message}` +
        (cause === undefined ? '' : ` (${cause.code}: ${cause.message})`);
  return new CairnError(
    'RUN_DEAD_LETTERED',
    `Run "${run.runId}" was dead-lettered: its last ${run.stalls} attempts ended in an error before it ` +
      `could go on (maxStalls ${maxStalls}).${last} Its last checkpoint and journal are kept.`,
    {
      data: {
        runId: run.runId,
        stalls: run.stalls,
        maxStalls,
        ...(run.error === undefined ? {} : { lastError: run.error as unknown as JsonValue }),
      },
    },
  );
}
