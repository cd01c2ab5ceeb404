import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * Moves the runs an instance held through sessions it lost to its new session, keeping every lease's epoch:
 * the holder never stopped, only its connection did. A run another instance took meanwhile names another
 * session and is left alone. The lost sessions are marked dead.
 */
export async function moveRuns(
  db: Db,
  names: Names,
  previous: readonly number[],
  current: number,
): Promise<number> {
  const rows = await query(
    db,
    `WITH moved AS (
       UPDATE ${names.runs} SET holder_session = $2::bigint
        WHERE holder_session = ANY($1::bigint[])
       RETURNING 1
     ), dead AS (
       UPDATE ${names.sessions} SET dead_at = coalesce(dead_at, clock_timestamp()) WHERE id = ANY($1::bigint[])
     )
     SELECT count(*)::int FROM moved`,
    [previous, current],
  );
  return (rows[0]?.[0] as number | undefined) ?? 0;
}
