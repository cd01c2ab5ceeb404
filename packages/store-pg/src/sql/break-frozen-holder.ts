import { query, type Db } from '../db.js';
import type { LockKey } from '../lock-key.js';
import type { Names } from '../names.js';

/** What a claimer that could not take the advisory lock found. */
export type HolderState = 'missing' | 'live' | 'terminated';

/**
 * When the run's lease ran out but the recorded holder's backend (pid and backend_start) still holds the
 * advisory lock, the holder is frozen with its connection alive: terminate that backend (waiting up to
 * `waitMs` for it to exit) so its lock goes. A lock held by anyone else is contention, never terminated.
 */
export async function breakFrozenHolder(
  db: Db,
  names: Names,
  runId: string,
  key: LockKey,
  waitMs: number,
): Promise<HolderState> {
  const rows = await query(
    db,
    `SELECT r.lease_until < now(),
            (SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
              WHERE l.locktype = 'advisory' AND l.granted
                AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                AND l.classid = $2::bigint::oid AND l.objid = $3::bigint::oid AND l.objsubid = 1
                AND l.pid = r.holder_pid AND a.backend_start = r.holder_backend_start)
       FROM ${names.runs} r WHERE r.run_id = $1::text`,
    [runId, key.classid, key.objid],
  );
  const row = rows[0];
  if (row === undefined) return 'missing';
  const [expired, frozenPid] = row;
  if (expired !== true || typeof frozenPid !== 'number') return 'live';
  const terminated = await query(db, 'SELECT pg_terminate_backend($1::int, $2::bigint)', [
    frozenPid,
    waitMs,
  ]);
  return terminated[0]?.[0] === true ? 'terminated' : 'live';
}
