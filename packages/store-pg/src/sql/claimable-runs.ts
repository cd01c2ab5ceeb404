import type { ClaimableOptions } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * Ids of runs a worker may claim, oldest first: queued, running or suspended, of one of its definitions, not
 * a child run (its root's holder adopts it), and with no live holder (none, a lease that ran out, or a holder whose session is gone). A hint only:
 * the claim itself decides, under the advisory lock.
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
        AND (r.owner IS NULL OR r.lease_until < now() OR r.holder_pid IS NULL OR r.owner = $3::text
             OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a
                             WHERE a.pid = r.holder_pid AND a.backend_start = r.holder_backend_start))
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
