import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/** Flags a run that has not ended for cancellation; its holder sees the flag at its next renewal. */
export async function requestCancel(db: Db, names: Names, runId: string): Promise<boolean> {
  const rows = await query(
    db,
    `UPDATE ${names.runs} SET cancel_requested = true, updated_at = clock_timestamp()
      WHERE run_id = $1::text AND status NOT IN ('completed', 'failed', 'cancelled', 'dead_lettered')
     RETURNING 1`,
    [runId],
  );
  return rows.length === 1;
}
