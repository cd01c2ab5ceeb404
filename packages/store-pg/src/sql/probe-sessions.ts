import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * Finds the sessions that are gone and marks them dead: a session is gone when its liveness lock is free,
 * which `pg_try_advisory_xact_lock` tells whatever the role (and releases at once, at the statement's end,
 * so a probe never keeps a lock). One lock call per session row, in a plain statement over a small table.
 * Also forgets sessions dead for a day that no run names any more. Returns the ids newly found dead.
 */
export async function probeSessions(
  db: Db,
  names: Names,
  mine: readonly number[],
): Promise<number[]> {
  const rows = await query(
    db,
    `WITH gone AS (
       UPDATE ${names.sessions} s SET dead_at = clock_timestamp()
        WHERE s.dead_at IS NULL AND s.id <> ALL($1::bigint[]) AND pg_try_advisory_xact_lock(s.lock_key)
       RETURNING s.id
     ), forgotten AS (
       DELETE FROM ${names.sessions} s
        WHERE s.dead_at < now() - interval '1 day'
          AND NOT EXISTS (SELECT 1 FROM ${names.runs} r WHERE r.holder_session = s.id)
     )
     SELECT id::float8 FROM gone`,
    [mine],
  );
  return rows.map((row) => row[0] as number);
}
