import type { Lease } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/** What `adoptRun` found: the adopted child's lease, or why not. */
export type Adoption = Lease | 'missing' | 'not-a-child' | undefined;

/**
 * Raises a child run's epoch to its parent's lease epoch, in one statement, when the child belongs to this
 * incarnation of the parent, its epoch is not higher, and the parent's lease is still current (the parent
 * row, and the root's when the parent is itself a child, at this epoch; the root's owner), so a holder that
 * lost the root cannot adopt. The child keeps no owner of its own: its root's lease holds it. Undefined when
 * refused; 'missing' for an unknown child; 'not-a-child' when it is not this parent incarnation's child.
 */
export async function adoptRun(
  db: Db,
  names: Names,
  childRunId: string,
  parent: Lease,
): Promise<Adoption> {
  const root = parent.root ?? { runId: parent.runId, incarnation: parent.incarnation };
  const rows = await query(
    db,
    `WITH child AS (
       SELECT c.run_id, c.parent_run_id = $2::text AND c.parent_incarnation::text = $3::text AS ours
         FROM ${names.runs} c WHERE c.run_id = $1::text
     ), adopted AS (
       UPDATE ${names.runs} c
          SET epoch = $4::bigint, updated_at = clock_timestamp()
         FROM child k
        WHERE c.run_id = k.run_id AND k.ours AND c.epoch <= $4::bigint
          AND EXISTS (SELECT 1 FROM ${names.runs} p
                       WHERE p.run_id = $2::text AND p.created_seq::text = $3::text AND p.epoch = $4::bigint)
          AND EXISTS (SELECT 1 FROM ${names.runs} h
                       WHERE h.run_id = $6::text AND h.created_seq::text = $7::text AND h.epoch = $4::bigint
                         AND h.owner = $5::text)
       RETURNING c.created_seq::text
     )
     SELECT (SELECT count(*)::int FROM child), (SELECT bool_or(ours) FROM child),
            (SELECT created_seq FROM adopted)`,
    [
      childRunId,
      parent.runId,
      parent.incarnation,
      parent.epoch,
      parent.owner,
      root.runId,
      root.incarnation,
    ],
  );
  const [found, ours, incarnation] = rows[0] ?? [];
  if (found !== 1) return 'missing';
  if (ours !== true) return 'not-a-child';
  if (typeof incarnation !== 'string') return undefined;
  return {
    runId: childRunId,
    incarnation,
    owner: parent.owner,
    epoch: parent.epoch,
    leaseUntil: parent.leaseUntil,
    root,
  };
}
