import type { Checkpoint, JsonValue } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';
import type { ItemsWrite } from '../snapshot-items.js';

/** One run's checkpoint: the snapshot without its long arrays, and what to write of those. */
export interface CheckpointWrite {
  runId: string;
  epoch: number;
  checkpoint: Checkpoint;
  inline: JsonValue;
  items: ItemsWrite;
}

/** What a save did: nothing (`lost`: the epoch is not current; `stale`: the known version was not), or the new version. */
export type SaveOutcome = { type: 'saved'; version: number } | { type: 'lost' } | { type: 'stale' };

/**
 * Writes the checkpoints of several runs in one statement, each fenced by its own epoch: the snapshot without
 * its long arrays, the arrays' new elements into `snapshot_items` (and the removal of rows past their
 * lengths), and the removal of the journal each supersedes. A write with `items.expectedVersion` applies only
 * if that is still its run's stored version. Rows are locked in run id order, so batches never deadlock.
 */
export async function saveCheckpoints(
  db: Db,
  names: Names,
  writes: readonly CheckpointWrite[],
): Promise<SaveOutcome[]> {
  const ops = writes.map(({ runId, epoch, checkpoint, inline, items }) => ({
    run_id: runId,
    epoch,
    status: checkpoint.status,
    signature: checkpoint.signature,
    snapshot: inline,
    output: checkpoint.output ?? null,
    has_output: checkpoint.output !== undefined,
    error: checkpoint.error ?? null,
    expected_version: items.expectedVersion,
    lengths: items.lengths,
  }));
  const upserts = writes.flatMap(({ runId, items }) =>
    items.upserts.map(({ path, idx, item }) => ({ run_id: runId, path, idx, item })),
  );
  const rows = await query(
    db,
    `WITH ops AS (
       SELECT * FROM jsonb_to_recordset($1::text::jsonb) AS o(
         run_id text, epoch bigint, status text, signature text, snapshot jsonb, output jsonb,
         has_output boolean, error jsonb, expected_version bigint, lengths jsonb)
     ), locked AS (
       SELECT r.run_id FROM ${names.runs} r JOIN ops o ON o.run_id = r.run_id AND o.epoch = r.epoch
        WHERE o.expected_version IS NULL OR r.snapshot_version = o.expected_version
        ORDER BY r.run_id FOR UPDATE OF r
     ), fenced AS (
       UPDATE ${names.runs} r
          SET status = o.status, signature = o.signature, snapshot = o.snapshot,
              output = CASE WHEN o.has_output THEN coalesce(o.output, 'null'::jsonb) END, error = o.error,
              updated_at = clock_timestamp(), snapshot_version = r.snapshot_version + 1
         FROM locked l JOIN ops o ON o.run_id = l.run_id
        WHERE r.run_id = l.run_id
       RETURNING r.run_id, r.snapshot_version, o.lengths
     ), superseded AS (
       DELETE FROM ${names.journal} j USING fenced f WHERE j.run_id = f.run_id
     ), trimmed AS (
       DELETE FROM ${names.snapshotItems} s USING fenced f
        WHERE s.run_id = f.run_id
          AND (NOT (f.lengths ? s.path) OR s.idx >= (f.lengths ->> s.path)::int)
     ), written AS (
       INSERT INTO ${names.snapshotItems} (run_id, path, idx, item)
       SELECT f.run_id, x.path, x.idx, x.item
         FROM fenced f
         JOIN jsonb_to_recordset($2::text::jsonb) AS x(run_id text, path text, idx int, item jsonb)
           ON x.run_id = f.run_id
       ON CONFLICT (run_id, path, idx) DO UPDATE SET item = EXCLUDED.item
     )
     SELECT o.run_id, f.snapshot_version::float8,
            EXISTS (SELECT 1 FROM ${names.runs} r WHERE r.run_id = o.run_id AND r.epoch = o.epoch)
       FROM ops o LEFT JOIN fenced f ON f.run_id = o.run_id`,
    [JSON.stringify(ops), JSON.stringify(upserts)],
  );
  const byRun = new Map(rows.map((row) => [row[0] as string, row]));
  return writes.map((write): SaveOutcome => {
    const row = byRun.get(write.runId);
    if (typeof row?.[1] === 'number') return { type: 'saved', version: row[1] };
    return row?.[2] === true ? { type: 'stale' } : { type: 'lost' };
  });
}
