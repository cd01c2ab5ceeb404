import type { Lease } from '@cairn/sdk';
import type { Names } from '../names.js';
import {
  decodeJournal,
  decodeRun,
  journalColumn,
  millis,
  runColumnCount,
  runColumns,
} from '../row.js';

/**
 * What a claim statement returns of each run it claimed (its target aliased `alias`): the record with its
 * journal, then the lease fields and the owner it was taken from (`previousOwner`, an expression), so the
 * holder need not load the run again.
 */
export function claimedColumns(names: Names, alias: string, previousOwner: string): string {
  return `${runColumns(names, alias)}, ${journalColumn(names, alias)},
          ${millis(`${alias}.lease_until`)}, ${previousOwner}`;
}

/** The lease of a row selected with `claimedColumns`. */
export function decodeClaimed(row: readonly unknown[], owner: string): Lease {
  const run = decodeRun(row);
  const journal = decodeJournal(row[runColumnCount]);
  return {
    runId: run.runId,
    incarnation: run.incarnation,
    owner,
    epoch: run.epoch,
    leaseUntil: row[runColumnCount + 1] as number,
    recoveries: run.recoveries,
    cancelRequested: run.cancelRequested,
    takenFrom: (row[runColumnCount + 2] as string | null) ?? null,
    claimed: { run, journal },
  };
}
