import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/** Removes a run; its journal goes with it (ON DELETE CASCADE). True when it existed. */
export async function deleteRun(db: Db, names: Names, runId: string): Promise<boolean> {
  const rows = await query(db, `DELETE FROM ${names.runs} WHERE run_id = $1::text RETURNING 1`, [
    runId,
  ]);
  return rows.length === 1;
}
