import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * Takes the session's liveness lock, then records the session, on its own connection. The lock is taken
 * first: a claimer that reads the row can only find the lock free once the session is gone.
 */
export async function openSession(
  db: Db,
  names: Names,
  lockKey: string,
  instance: string,
): Promise<number> {
  await query(db, 'SELECT pg_advisory_lock($1::bigint)', [lockKey]);
  const rows = await query(
    db,
    `INSERT INTO ${names.sessions} (lock_key, instance) VALUES ($1::bigint, $2::uuid) RETURNING id::float8`,
    [lockKey, instance],
  );
  return rows[0]?.[0] as number;
}
