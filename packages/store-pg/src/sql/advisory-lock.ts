import { query, type Db } from '../db.js';
import type { LockKey } from '../lock-key.js';

// One key per statement, never inside a query with LIMIT or a CTE: the planner may call a lock function
// more often than the rows it returns. Each statement also returns the backend pid it ran on, so the lock
// connection can tell that its session changed under it.

/** Tries the run's session advisory lock; returns whether it was taken and the backend that ran it. */
export async function tryAdvisoryLock(
  db: Db,
  key: LockKey,
): Promise<{ locked: boolean; pid: number }> {
  const rows = await query(db, 'SELECT pg_try_advisory_lock($1::bigint), pg_backend_pid()', [
    key.key,
  ]);
  return { locked: rows[0]?.[0] === true, pid: rows[0]?.[1] as number };
}

/** Releases the run's session advisory lock; returns whether this session held it. */
export async function advisoryUnlock(
  db: Db,
  key: LockKey,
): Promise<{ unlocked: boolean; pid: number }> {
  const rows = await query(db, 'SELECT pg_advisory_unlock($1::bigint), pg_backend_pid()', [
    key.key,
  ]);
  return { unlocked: rows[0]?.[0] === true, pid: rows[0]?.[1] as number };
}
