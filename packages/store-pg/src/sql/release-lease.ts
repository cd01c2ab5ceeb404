import type { Lease } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/** Clears the owner when this lease (owner, incarnation and epoch) still holds the run; true when it did. */
export async function releaseLease(db: Db, names: Names, lease: Lease): Promise<boolean> {
  const rows = await query(
    db,
    `UPDATE ${names.runs}
        SET owner = NULL, lease_until = NULL, holder_pid = NULL, holder_backend_start = NULL
      WHERE run_id = $1::text AND created_seq::text = $4::text AND owner = $2::text AND epoch = $3::bigint
     RETURNING 1`,
    [lease.runId, lease.owner, lease.epoch, lease.incarnation],
  );
  return rows.length === 1;
}
