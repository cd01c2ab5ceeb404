import type { Lease } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * Raises a child run's epoch to its parent's lease epoch, in one statement, when the child's epoch is not
 * higher and the parent lease is still current (same owner and epoch on the parent's row), so a parent
 * holder that lost its lease cannot adopt. Undefined when refused; 'missing' for an unknown child.
 */
export async function adoptRun(
  db: Db,
  names: Names,
  childRunId: string,
  parent: Lease,
): Promise<Lease | undefined | 'missing'> {
  const rows = await query(
    db,
    `WITH child AS (SELECT run_id FROM ${names.runs} WHERE run_id = $1::text),
     adopted AS (
       UPDATE ${names.runs} c
          SET epoch = $3::bigint, owner = $4::text, lease_until = to_timestamp($5::float8 / 1000),
              holder_pid = NULL, holder_backend_start = NULL, updated_at = clock_timestamp()
        WHERE c.run_id = $1::text AND c.epoch <= $3::bigint
          AND EXISTS (SELECT 1 FROM ${names.runs} p
                       WHERE p.run_id = $2::text AND p.epoch = $3::bigint AND p.owner = $4::text)
       RETURNING c.run_id
     )
     SELECT (SELECT count(*)::int FROM child), (SELECT count(*)::int FROM adopted)`,
    [childRunId, parent.runId, parent.epoch, parent.owner, parent.leaseUntil],
  );
  if (rows[0]?.[0] !== 1) return 'missing';
  if (rows[0]?.[1] !== 1) return undefined;
  return {
    runId: childRunId,
    owner: parent.owner,
    epoch: parent.epoch,
    leaseUntil: parent.leaseUntil,
  };
}
