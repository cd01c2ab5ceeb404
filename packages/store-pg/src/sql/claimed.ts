import type { Lease, RunRecord, StoredRun } from '@cairn/sdk';
import type { Names } from '../names.js';
import {
  decodeJournal,
  decodeRun,
  decodeSignals,
  journalColumn,
  millis,
  runColumnCount,
  runColumns,
  signalsColumn,
} from '../row.js';

/**
 * What a claim statement returns of each run it claimed (its target aliased `alias`): the record with its
 * journal and mailbox, then the lease fields and the owner it was taken from (`previousOwner`, an
 * expression), so the holder need not load the run again.
 */
export function claimedColumns(names: Names, alias: string, previousOwner: string): string {
  return `${runColumns(names, alias)}, ${journalColumn(names, alias)}, ${signalsColumn(names, alias)},
          ${millis(`${alias}.lease_until`)}, ${previousOwner}, ${alias}.checkpoint_seq::float8`;
}

/** A `StoredRun`'s `checkpointSeq` from the `checkpoint_seq` column read (NULL before the first checkpoint). */
export function checkpointSeqOf(value: unknown): { checkpointSeq?: number } {
  return typeof value === 'number' ? { checkpointSeq: value } : {};
}

/** The lease of a row selected with `claimedColumns`. */
export function decodeClaimed(row: readonly unknown[], owner: string): Lease {
  let run: RunRecord;
  let claimed: StoredRun | undefined;
  try {
    run = decodeRun(row);
    claimed = {
      run,
      journal: decodeJournal(row[runColumnCount], run.runId),
      signals: decodeSignals(row[runColumnCount + 1], run.runId),
      ...checkpointSeqOf(row[runColumnCount + 4]),
    };
  } catch {
    // A run whose rows were changed behind the store's back (whatever in them cannot be read) is claimed with the
    // others of the batch but not handed over as read: its holder loads it again, meets SNAPSHOT_INVALID itself
    // and gives it back. The others of the batch are handed over as read.
    run = decodeRun(row, 'null');
    claimed = undefined;
  }
  return {
    runId: run.runId,
    incarnation: run.incarnation,
    owner,
    epoch: run.epoch,
    leaseUntil: row[runColumnCount + 2] as number,
    recoveries: run.recoveries,
    cancelRequested: run.cancelRequested,
    takenFrom: (row[runColumnCount + 3] as string | null) ?? null,
    ...(claimed === undefined ? {} : { claimed }),
  };
}

/**
 * A CTE `me`: whether the claimer's own session (`session`, a parameter; NULL without sessions) is alive, its
 * liveness lock held. A claim is recorded under that session, and a claim under a session that is already
 * gone (lost a moment ago, before its store noticed) would hand the run to the next claimer at once: such a
 * claim takes nothing, and says so (see `sessionLostRow`).
 */
export function ownSession(names: Names, session: string): string {
  return `me AS MATERIALIZED (
       SELECT ${session} IS NULL
              OR NOT EXISTS (SELECT 1 FROM ${names.sessions} s
                              WHERE s.id = ${session} AND pg_try_advisory_xact_lock(s.lock_key)) AS alive
     )`;
}

/**
 * The end of a claim statement whose claimed rows (`claimedColumns`) are in the CTE `claimed`: those rows, or
 * one row saying the claimer's session is gone (`me`), its last column false.
 */
export function claimedOrSessionLost(): string {
  const nulls = Array.from({ length: runColumnCount + 5 }, () => 'NULL').join(', ');
  return `SELECT c.*, true FROM claimed c
     UNION ALL SELECT ${nulls}, false FROM me WHERE NOT me.alive`;
}

/** Whether a claim statement's rows say the claimer's own session is gone. */
export function sessionLost(rows: ReadonlyArray<readonly unknown[]>): boolean {
  return rows.length === 1 && rows[0]![runColumnCount + 5] === false;
}
