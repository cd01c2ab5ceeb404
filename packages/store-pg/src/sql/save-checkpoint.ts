import type { Checkpoint } from '@cairn/sdk';
import { jsonParam, query, type Db } from '../db.js';
import type { Names } from '../names.js';
import type { ItemsWrite } from '../snapshot-items.js';

/** What a save did: nothing (`lost`: the epoch is not current; `stale`: the known version was not), or the new version. */
export type SaveOutcome = { type: 'saved'; version: number } | { type: 'lost' } | { type: 'stale' };

/**
 * Writes a checkpoint at `epoch` in one statement: the snapshot without its long arrays, the arrays' new
 * elements into `snapshot_items` (and the removal of rows past their lengths), and the removal of the
 * journal it supersedes. With `items.expectedVersion`, it writes only if that is still the stored version.
 */
export async function saveCheckpoint(
  db: Db,
  names: Names,
  runId: string,
  epoch: number,
  checkpoint: Checkpoint,
  inline: unknown,
  items: ItemsWrite,
): Promise<SaveOutcome> {
  const rows = await query(
    db,
    `WITH fenced AS (
       UPDATE ${names.runs}
          SET status = $3::text, signature = $4::text, snapshot = $5::text::jsonb,
              output = $6::text::jsonb, error = $7::text::jsonb, updated_at = clock_timestamp(),
              snapshot_version = snapshot_version + 1
        WHERE run_id = $1::text AND epoch = $2::bigint
          AND ($8::bigint IS NULL OR snapshot_version = $8::bigint)
       RETURNING run_id, snapshot_version
     ), superseded AS (
       DELETE FROM ${names.journal} j USING fenced f WHERE j.run_id = f.run_id
     ), trimmed AS (
       DELETE FROM ${names.snapshotItems} s USING fenced f
        WHERE s.run_id = f.run_id
          AND (NOT ($9::text::jsonb ? s.path) OR s.idx >= ($9::text::jsonb ->> s.path)::int)
     ), written AS (
       INSERT INTO ${names.snapshotItems} (run_id, path, idx, item)
       SELECT f.run_id, x.path, x.idx, x.item
         FROM fenced f, jsonb_to_recordset($10::text::jsonb) AS x(path text, idx int, item jsonb)
       ON CONFLICT (run_id, path, idx) DO UPDATE SET item = EXCLUDED.item
     )
     SELECT (SELECT snapshot_version::float8 FROM fenced),
            (SELECT count(*)::int FROM ${names.runs} WHERE run_id = $1::text AND epoch = $2::bigint)`,
    [
      runId,
      epoch,
      checkpoint.status,
      checkpoint.signature,
      jsonParam(inline),
      jsonParam(checkpoint.output),
      jsonParam(checkpoint.error),
      items.expectedVersion,
      JSON.stringify(items.lengths),
      JSON.stringify(items.upserts),
    ],
  );
  const version = rows[0]?.[0];
  if (typeof version === 'number') return { type: 'saved', version };
  return rows[0]?.[1] === 1 ? { type: 'stale' } : { type: 'lost' };
}
