import type { ClaimableOptions } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * Ids of runs a worker may claim, oldest first: root runs in a claimable status, of one of its definitions,
 * with no owner, a lease that ran out, a holder whose session was found dead, or (with `reclaimOwner`) this
 * owner's. A hint only, read without locks: `acquire` or `claim` decides.
 */
export async function claimableRuns(
  db: Db,
  names: Names,
  { limit, definitions, reclaimOwner }: ClaimableOptions,
): Promise<string[]> {
  if (definitions.length === 0 || limit <= 0) return [];
  const rows = await query(
    db,
    `SELECT r.run_id FROM ${names.runs} r
      WHERE r.status IN ('queued', 'running', 'suspended') AND r.parent_run_id IS NULL
        AND (r.kind, r.name) IN (SELECT d->>'kind', d->>'name' FROM jsonb_array_elements($1::text::jsonb) d)
        AND (r.owner IS NULL OR r.lease_until < now() OR r.owner = $3::text
             OR r.holder_session IN (SELECT s.id FROM ${names.sessions} s WHERE s.dead_at IS NOT NULL))
      ORDER BY r.created_seq
      LIMIT $2::bigint`,
    [
      JSON.stringify(definitions.map(({ kind, name }) => ({ kind, name }))),
      limit,
      reclaimOwner ?? null,
    ],
  );
  return rows.map((row) => row[0] as string);
}
