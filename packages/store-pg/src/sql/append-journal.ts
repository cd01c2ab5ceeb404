import type { JournalEntry } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * Appends journal entries at `epoch` in one statement. An entry whose seq is not above the highest seq
 * appended so far (`runs.journal_seq`, kept across checkpoints) or above an earlier entry of the same call
 * is skipped, and the primary key (run_id, seq) turns a concurrent duplicate into a no-op, so a retried
 * append never duplicates an entry. False when the epoch is not current: the lease is lost.
 */
export async function appendJournal(
  db: Db,
  names: Names,
  runId: string,
  epoch: number,
  entries: readonly JournalEntry[],
): Promise<boolean> {
  const rows = await query(
    db,
    `WITH input AS (
       SELECT (e ->> 'seq')::bigint AS seq, e AS entry,
              max((e ->> 'seq')::bigint) OVER (ORDER BY ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS earlier
         FROM jsonb_array_elements($3::text::jsonb) WITH ORDINALITY AS t(e, ord)
     ), prior AS (
       SELECT journal_seq FROM ${names.runs} WHERE run_id = $1::text
     ), fenced AS (
       UPDATE ${names.runs}
          SET updated_at = clock_timestamp(),
              journal_seq = greatest(journal_seq, (SELECT max(seq) FROM input))
        WHERE run_id = $1::text AND epoch = $2::bigint
       RETURNING run_id
     ), inserted AS (
       INSERT INTO ${names.journal} (run_id, epoch, seq, entry)
       SELECT f.run_id, $2::bigint, i.seq, i.entry
         FROM fenced f CROSS JOIN input i LEFT JOIN prior p ON true
        WHERE (p.journal_seq IS NULL OR i.seq > p.journal_seq)
          AND (i.earlier IS NULL OR i.seq > i.earlier)
       ON CONFLICT (run_id, seq) DO NOTHING
     )
     SELECT count(*)::int FROM fenced`,
    [runId, epoch, JSON.stringify(entries)],
  );
  return rows[0]?.[0] === 1;
}
