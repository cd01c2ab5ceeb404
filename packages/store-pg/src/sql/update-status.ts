import type { StatusUpdate } from '@cairn/sdk';
import { jsonParam, query, type Db } from '../db.js';
import type { Names } from '../names.js';

/** Changes status and error at `epoch`, keeping snapshot and journal. False when the lease is lost. */
export async function updateStatus(
  db: Db,
  names: Names,
  runId: string,
  epoch: number,
  update: StatusUpdate,
): Promise<boolean> {
  const rows = await query(
    db,
    `UPDATE ${names.runs}
        SET status = $3::text, error = $4::text::jsonb, updated_at = clock_timestamp()
      WHERE run_id = $1::text AND epoch = $2::bigint
     RETURNING 1`,
    [runId, epoch, update.status, jsonParam(update.error)],
  );
  return rows.length === 1;
}
