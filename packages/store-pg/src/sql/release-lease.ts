import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/** Clears the owner when `owner` still holds the run at `epoch`; true when it did. */
export async function releaseLease(
  db: Db,
  names: Names,
  runId: string,
  owner: string,
  epoch: number,
): Promise<boolean> {
  const rows = await query(
    db,
    `UPDATE ${names.runs}
        SET owner = NULL, lease_until = NULL, holder_pid = NULL, holder_backend_start = NULL
      WHERE run_id = $1::text AND owner = $2::text AND epoch = $3::bigint
     RETURNING 1`,
    [runId, owner, epoch],
  );
  return rows.length === 1;
}
