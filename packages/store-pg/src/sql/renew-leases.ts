import type { Lease } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';
import { millis } from '../row.js';

/** One renewal: the lease (owner, incarnation, epoch) and its new length. */
export interface Renewal {
  lease: Lease;
  ttlMs: number;
}

/** What a renewal found: renewed (the new end, a cancel request), lost, or its row busy right now. */
export type RenewalOutcome =
  | { type: 'renewed'; leaseUntil: number; cancelRequested: boolean }
  | { type: 'lost' }
  | { type: 'busy' };

/**
 * Extends many leases in one statement on the database clock, each only while its owner still holds it at
 * that incarnation and epoch. A row another transaction has locked (a write of the run in flight, an
 * operator's `SELECT ... FOR UPDATE`) is skipped and reported `busy`, never waited for: one run's locked row
 * never holds up the renewals of the others. The caller tries a busy one again.
 */
export async function renewLeases(
  db: Db,
  names: Names,
  renewals: readonly Renewal[],
): Promise<RenewalOutcome[]> {
  const rows = await query(
    db,
    `WITH ops AS (
       SELECT * FROM jsonb_to_recordset($1::text::jsonb)
                AS o(ord int, run_id text, incarnation text, epoch bigint, owner text, ttl float8)
     ), free AS (
       SELECT r.run_id FROM ${names.runs} r JOIN ops o ON o.run_id = r.run_id
        ORDER BY r.run_id FOR NO KEY UPDATE OF r SKIP LOCKED
     ), renewed AS (
       UPDATE ${names.runs} r
          SET lease_until = now() + o.ttl * interval '1 millisecond', heartbeat_at = now()
         FROM ops o
        WHERE r.run_id = o.run_id AND r.run_id IN (SELECT f.run_id FROM free f)
          AND r.created_seq::text = o.incarnation AND r.epoch = o.epoch AND r.owner = o.owner
       RETURNING o.ord, ${millis('r.lease_until')} AS lease_until, r.cancel_requested
     )
     SELECT o.ord, n.ord IS NOT NULL, n.lease_until, n.cancel_requested,
            o.run_id NOT IN (SELECT f.run_id FROM free f)
              AND EXISTS (SELECT 1 FROM ${names.runs} x WHERE x.run_id = o.run_id)
       FROM ops o LEFT JOIN renewed n ON n.ord = o.ord
      ORDER BY o.ord`,
    [
      JSON.stringify(
        renewals.map(({ lease, ttlMs }, ord) => ({
          ord,
          run_id: lease.runId,
          incarnation: lease.incarnation,
          epoch: lease.epoch,
          owner: lease.owner,
          ttl: ttlMs,
        })),
      ),
    ],
  );
  return rows.map((row): RenewalOutcome => {
    if (row[1] === true) {
      return { type: 'renewed', leaseUntil: row[2] as number, cancelRequested: row[3] === true };
    }
    return row[4] === true ? { type: 'busy' } : { type: 'lost' };
  });
}
