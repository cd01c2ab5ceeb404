import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * The highest position in the stream of a run's current incarnation: the last entry of its primary key range,
 * found by one index lookup. 0 when it has none, or the run is unknown.
 */
export async function streamPosition(db: Db, names: Names, runId: string): Promise<number> {
  const rows = await query(
    db,
    `SELECT (SELECT s.position FROM ${names.runStream} s
              WHERE s.run_seq = r.created_seq ORDER BY s.position DESC LIMIT 1)::float8
       FROM ${names.runs} r WHERE r.run_id = $1::text`,
    [runId],
  );
  return (rows[0]?.[0] as number | null | undefined) ?? 0;
}
