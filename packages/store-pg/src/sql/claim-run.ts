import { query, type Db } from '../db.js';
import type { Names } from '../names.js';
import { millis } from '../row.js';

/**
 * Bumps the epoch and records this session as the holder, on the database clock, when the run is free:
 * no owner, a lease that ran out, or a holder whose lock connection is no longer alive (pid and
 * backend_start, which together survive pid reuse). Runs on the pool, so claims commit side by side; the
 * holder recorded is the lock connection's backend (`holderPid`), which holds the run's advisory lock. With `reclaimOwn`, a run still leased to this same owner (a restarted process) is free too.
 * A claim from a holder that never released the run counts as a recovery. Undefined when the run is held by
 * a live owner or does not exist.
 */
export async function claimRun(
  db: Db,
  names: Names,
  runId: string,
  owner: string,
  ttlMs: number,
  reclaimOwn: boolean,
  holderPid: number,
): Promise<
  | { epoch: number; leaseUntil: number; pid: number; recoveries: number; cancelRequested: boolean }
  | undefined
> {
  const rows = await query(
    db,
    `UPDATE ${names.runs} r
        SET epoch = r.epoch + 1, owner = $2::text,
            recoveries = r.recoveries + (r.owner IS NOT NULL)::int,
            lease_until = now() + $3::float8 * interval '1 millisecond', heartbeat_at = now(),
            holder_pid = $5::int,
            holder_backend_start = (SELECT a.backend_start FROM pg_stat_activity a WHERE a.pid = $5::int)
      WHERE r.run_id = $1::text
        AND (r.owner IS NULL OR r.lease_until < now() OR r.holder_pid IS NULL
             OR ($4::boolean AND r.owner = $2::text)
             OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a
                             WHERE a.pid = r.holder_pid AND a.backend_start = r.holder_backend_start))
     RETURNING r.epoch::float8, ${millis('r.lease_until')}, $5::int, r.recoveries, r.cancel_requested`,
    [runId, owner, ttlMs, reclaimOwn, holderPid],
  );
  const row = rows[0];
  if (row === undefined) return undefined;
  return {
    epoch: row[0] as number,
    leaseUntil: row[1] as number,
    pid: row[2] as number,
    recoveries: row[3] as number,
    cancelRequested: row[4] as boolean,
  };
}

/** Whether a run with this id exists. */
export async function runExists(db: Db, names: Names, runId: string): Promise<boolean> {
  const rows = await query(db, `SELECT 1 FROM ${names.runs} WHERE run_id = $1::text`, [runId]);
  return rows.length === 1;
}
