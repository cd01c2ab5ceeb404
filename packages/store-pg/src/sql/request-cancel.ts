import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * Flags a run that has not ended for cancellation; its holder sees the flag at its next renewal. A child run
 * is cancelled with its root, so it is never flagged.
 */
export async function requestCancel(db: Db, names: Names, runId: string): Promise<boolean> {
  const rows = await query(
    db,
    `UPDATE ${names.runs} SET cancel_requested = true, updated_at = clock_timestamp()
      WHERE run_id = $1::text AND parent_run_id IS NULL
        AND status NOT IN ('completed', 'failed', 'cancelled', 'dead_lettered')
     RETURNING 1`,
    [runId],
  );
  return rows.length === 1;
}
