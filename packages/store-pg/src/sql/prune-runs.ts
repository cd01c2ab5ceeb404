import type { RunStatus } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * Deletes runs in one of `statuses` last updated before `olderThanMs`, never one whose lease is live and
 * never a child run on its own (its root may still need it): children go with their root (ON DELETE
 * CASCADE). Returns how many were deleted.
 */
export async function pruneRuns(
  db: Db,
  names: Names,
  olderThanMs: number,
  statuses: readonly RunStatus[],
): Promise<number> {
  const rows = await query(
    db,
    `WITH pruned AS (
       DELETE FROM ${names.runs}
        WHERE status IN (SELECT jsonb_array_elements_text($2::text::jsonb))
          AND updated_at < to_timestamp($1::float8 / 1000)
          AND parent_run_id IS NULL
          AND (owner IS NULL OR lease_until < now())
       RETURNING 1
     )
     SELECT count(*)::int FROM pruned`,
    [olderThanMs, JSON.stringify(statuses)],
  );
  return (rows[0]?.[0] as number | undefined) ?? 0;
}
