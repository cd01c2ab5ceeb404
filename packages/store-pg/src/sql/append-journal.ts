import type { JournalEntry } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/** One run's append: its entries, fenced by its epoch. */
export interface JournalWrite {
  runId: string;
  epoch: number;
  entries: readonly JournalEntry[];
}

/**
 * Appends the journal entries of several runs in one statement, each fenced by its own epoch. An entry whose
 * seq is not above the highest seq appended to its run so far (`runs.journal_seq`, kept across checkpoints)
 * or above an earlier entry of the same write is skipped, and the primary key (run_id, seq) turns a
 * concurrent duplicate into a no-op, so a retried append never duplicates an entry. The runs' rows are locked
 * in run id order, so two batches never deadlock. Returns, per write, whether its epoch was current.
 */
export async function appendJournals(
  db: Db,
  names: Names,
  writes: readonly JournalWrite[],
): Promise<boolean[]> {
  const rows = await query(
    db,
    `WITH ops AS (
       SELECT o.run_id, o.epoch, o.entries
         FROM jsonb_to_recordset($1::text::jsonb) AS o(run_id text, epoch bigint, entries jsonb)
     ), locked AS (
       SELECT r.run_id, r.journal_seq FROM ${names.runs} r JOIN ops o ON o.run_id = r.run_id AND o.epoch = r.epoch
        ORDER BY r.run_id FOR UPDATE OF r
     ), input AS (
       SELECT o.run_id, (e ->> 'seq')::bigint AS seq, e AS entry,
              max((e ->> 'seq')::bigint) OVER (PARTITION BY o.run_id ORDER BY ord
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS earlier
         FROM ops o, jsonb_array_elements(o.entries) WITH ORDINALITY AS t(e, ord)
     ), fenced AS (
       UPDATE ${names.runs} r
          SET updated_at = clock_timestamp(),
              journal_seq = greatest(r.journal_seq, (SELECT max(i.seq) FROM input i WHERE i.run_id = r.run_id))
         FROM locked l JOIN ops o ON o.run_id = l.run_id
        WHERE r.run_id = l.run_id AND r.epoch = o.epoch
       RETURNING r.run_id, o.epoch, l.journal_seq AS prior
     ), inserted AS (
       INSERT INTO ${names.journal} (run_id, epoch, seq, entry)
       SELECT f.run_id, f.epoch, i.seq, i.entry
         FROM fenced f JOIN input i ON i.run_id = f.run_id
        WHERE (f.prior IS NULL OR i.seq > f.prior)
          AND (i.earlier IS NULL OR i.seq > i.earlier)
       ON CONFLICT (run_id, seq) DO NOTHING
     )
     SELECT run_id FROM fenced`,
    [
      JSON.stringify(
        writes.map(({ runId, epoch, entries }) => ({ run_id: runId, epoch, entries })),
      ),
    ],
  );
  const fenced = new Set(rows.map((row) => row[0] as string));
  return writes.map((write) => fenced.has(write.runId));
}
