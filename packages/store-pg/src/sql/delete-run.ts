import { LeaseHeldError } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * Removes a run unless a live lease holds it (its own, or for a child its root's), decided on the database
 * clock with the rows locked, so a claim cannot slip in between the check and the delete. Its journal, snapshot
 * items and child runs go with it (ON DELETE CASCADE). True when it existed; `LeaseHeldError` when held.
 */
export async function deleteRun(db: Db, names: Names, runId: string): Promise<boolean> {
  const rows = await query(
    db,
    `WITH target AS (
       SELECT r.run_id, h.owner IS NOT NULL AND h.lease_until > now() AS held
         FROM ${names.runs} r JOIN ${names.runs} h ON h.run_id = coalesce(r.root_run_id, r.run_id)
        WHERE r.run_id = $1::text
          FOR UPDATE OF r, h
     ), deleted AS (
       DELETE FROM ${names.runs} r USING target t WHERE r.run_id = t.run_id AND NOT t.held RETURNING 1
     )
     SELECT (SELECT count(*)::int FROM target), (SELECT count(*)::int FROM deleted)`,
    [runId],
  );
  const [found, deleted] = rows[0] ?? [];
  if (found === 0) return false;
  if (deleted === 0) throw new LeaseHeldError(runId);
  return true;
}
