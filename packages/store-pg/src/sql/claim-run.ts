import { query, type Db } from '../db.js';
import type { Names } from '../names.js';
import { finalStatusList, millis } from '../row.js';

/** What a successful claim returns. */
export interface Claimed {
  incarnation: string;
  epoch: number;
  leaseUntil: number;
  recoveries: number;
  cancelRequested: boolean;
}

/**
 * Bumps the epoch and records this lock session as the holder, on the database clock, when the run may be
 * taken: it is not a child run (its root's holder adopts it) and not in a final status, and it is free: no
 * owner, a lease that ran out, or (with `reclaimOwn`) a lease of this same owner (a restarted process). When
 * the claimer holds the run's advisory lock (`lockHeld`), a holder whose lock session is gone (pid and
 * backend_start, which together survive pid reuse) is gone too, so its run is free at once. Without the lock
 * (a frozen holder's session still has it) only the lease row decides: the run is free once its lease ran
 * out, and the frozen holder is fenced by the epoch when it wakes; its session is never ended, so its other
 * runs go on. Runs on the pool, so claims commit side by side. A claim from a holder that never released
 * the run counts as a recovery. Undefined when the run cannot be claimed or does not exist.
 */
export async function claimRun(
  db: Db,
  names: Names,
  claim: {
    runId: string;
    owner: string;
    ttlMs: number;
    reclaimOwn: boolean;
    holderPid: number;
    lockHeld: boolean;
  },
): Promise<Claimed | undefined> {
  const rows = await query(
    db,
    `UPDATE ${names.runs} r
        SET epoch = r.epoch + 1, owner = $2::text,
            recoveries = r.recoveries + (r.owner IS NOT NULL)::int,
            lease_until = now() + $3::float8 * interval '1 millisecond', heartbeat_at = now(),
            holder_pid = $5::int,
            holder_backend_start = (SELECT a.backend_start FROM pg_stat_activity a WHERE a.pid = $5::int)
      WHERE r.run_id = $1::text AND r.parent_run_id IS NULL AND r.status NOT IN ${finalStatusList}
        AND (r.owner IS NULL OR r.lease_until < now() OR ($4::boolean AND r.owner = $2::text)
             OR ($6::boolean AND (r.holder_pid IS NULL
                 OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a
                                 WHERE a.pid = r.holder_pid AND a.backend_start = r.holder_backend_start))))
     RETURNING r.created_seq::text, r.epoch::float8, ${millis('r.lease_until')}, r.recoveries,
               r.cancel_requested`,
    [claim.runId, claim.owner, claim.ttlMs, claim.reclaimOwn, claim.holderPid, claim.lockHeld],
  );
  const row = rows[0];
  if (row === undefined) return undefined;
  return {
    incarnation: row[0] as string,
    epoch: row[1] as number,
    leaseUntil: row[2] as number,
    recoveries: row[3] as number,
    cancelRequested: row[4] as boolean,
  };
}

/** Whether a run with this id exists. */
export async function runExists(db: Db, names: Names, runId: string): Promise<boolean> {
  const rows = await query(db, `SELECT 1 FROM ${names.runs} WHERE run_id = $1::text`, [runId]);
  return rows.length === 1;
}
