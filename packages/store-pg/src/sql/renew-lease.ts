import type { Lease } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';
import { millis } from '../row.js';

/**
 * Extends a lease on the database clock. Runs on the lock connection and matches only while this very
 * session is the recorded holder of this incarnation at this epoch, so a renewal also proves the claim
 * still stands. Undefined when the lease is lost.
 */
export async function renewLease(
  db: Db,
  names: Names,
  lease: Lease,
  ttlMs: number,
): Promise<{ leaseUntil: number; pid: number; cancelRequested: boolean } | undefined> {
  const rows = await query(
    db,
    `UPDATE ${names.runs}
        SET lease_until = now() + $4::float8 * interval '1 millisecond', heartbeat_at = now()
      WHERE run_id = $1::text AND created_seq::text = $5::text AND owner = $2::text AND epoch = $3::bigint
        AND holder_pid = pg_backend_pid()
     RETURNING ${millis('lease_until')}, pg_backend_pid(), cancel_requested`,
    [lease.runId, lease.owner, lease.epoch, ttlMs, lease.incarnation],
  );
  const row = rows[0];
  return row === undefined
    ? undefined
    : { leaseUntil: row[0] as number, pid: row[1] as number, cancelRequested: row[2] as boolean };
}
