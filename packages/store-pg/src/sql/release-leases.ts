import type { Lease } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * Gives many runs up in one statement, each only while its lease (owner, incarnation, epoch) still holds it,
 * so another worker claims them without waiting for the leases to run out. A lost lease changes nothing.
 */
export async function releaseLeases(
  db: Db,
  names: Names,
  leases: readonly Lease[],
): Promise<boolean[]> {
  const rows = await query(
    db,
    `WITH ops AS (
       SELECT * FROM jsonb_to_recordset($1::text::jsonb)
                AS o(ord int, run_id text, incarnation text, epoch bigint, owner text)
     ), released AS (
       UPDATE ${names.runs} r
          SET owner = NULL, lease_until = NULL, lease_ms = NULL, holder_session = NULL
         FROM ops o
        WHERE r.run_id = o.run_id AND r.created_seq::text = o.incarnation AND r.epoch = o.epoch
          AND r.owner = o.owner
       RETURNING o.ord
     )
     SELECT o.ord, o.ord IN (SELECT ord FROM released) FROM ops o ORDER BY o.ord`,
    [
      JSON.stringify(
        leases.map((lease, ord) => ({
          ord,
          run_id: lease.runId,
          incarnation: lease.incarnation,
          epoch: lease.epoch,
          owner: lease.owner,
        })),
      ),
    ],
  );
  return rows.map((row) => row[1] === true);
}
