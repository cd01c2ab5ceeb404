import type { ClaimableOptions } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * The earliest `wait_until` (later than `after`, when given) among waiting root runs of the definitions that
 * nobody holds (or whose lease ran out), or null: read from the front (or from `after`) of
 * `runs_wait_until_idx`, whatever the number of waiting runs.
 */
export async function nextWake(
  db: Db,
  names: Names,
  definitions: ClaimableOptions['definitions'],
  after: number | undefined,
): Promise<number | null> {
  if (definitions.length === 0) return null;
  const rows = await query(
    db,
    `WITH defs AS (
       SELECT d ->> 'kind' AS kind, d ->> 'name' AS name FROM jsonb_array_elements($1::text::jsonb) d
     )
     SELECT r.wait_until FROM ${names.runs} r
      WHERE r.status = 'waiting' AND r.parent_run_id IS NULL AND r.wait_until IS NOT NULL
        AND ($2::float8 IS NULL OR r.wait_until > $2::float8)
        AND (r.kind, r.name) IN (SELECT d.kind, d.name FROM defs d)
        AND (r.owner IS NULL OR r.lease_until <= now())
      -- Not min(): with the definitions' join it would read every waiting run; this reads the index in order.
      ORDER BY r.wait_until LIMIT 1`,
    [JSON.stringify(definitions.map(({ kind, name }) => ({ kind, name }))), after ?? null],
  );
  return (rows[0]?.[0] as number | null | undefined) ?? null;
}
