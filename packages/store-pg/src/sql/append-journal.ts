import { LeaseLostError, type Fence, type JournalEntry } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import {
  checkedWrites,
  fenceCheckColumns,
  fenceCheckOf,
  fenceColumns,
  fenceRow,
  lockedRuns,
  mayApply,
  refusalOf,
} from '../fence.js';
import type { Names } from '../names.js';

/** One run's append: its entries, under its fence. */
export interface JournalWrite {
  fence: Fence;
  entries: readonly JournalEntry[];
}

/**
 * Appends the journal entries of several runs in one statement, each checked on its own (see `fence.ts`). An
 * entry whose seq is not above the highest seq appended to its run so far (`runs.journal_seq`, kept across
 * checkpoints), above the stored checkpoint's `checkpoint_seq`, or above an earlier entry of the same write
 * is skipped, and the primary key (run_id, seq) turns a concurrent duplicate into a no-op, so a retried
 * append never duplicates an entry. Returns, per write, undefined when it applied, `busy` when its row was
 * skipped (without `wait`: send it again on its own), or why it was refused.
 */
export async function appendJournals(
  db: Db,
  names: Names,
  writes: readonly JournalWrite[],
  wait: boolean,
): Promise<Array<LeaseLostError | 'busy' | undefined>> {
  const rows = await query(
    db,
    `WITH ops AS (
       SELECT * FROM jsonb_to_recordset($1::text::jsonb) AS o(${fenceColumns}, entries jsonb)
     ), ${lockedRuns(names, wait)}, ${checkedWrites()}, input AS (
       SELECT o.ord, (e ->> 'seq')::bigint AS seq, e AS entry,
              max((e ->> 'seq')::bigint) OVER (PARTITION BY o.ord ORDER BY n
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS earlier
         FROM ops o, jsonb_array_elements(o.entries) WITH ORDINALITY AS t(e, n)
     ), fenced AS (
       UPDATE ${names.runs} r
          SET updated_at = clock_timestamp(),
              journal_seq = greatest(r.journal_seq, (SELECT max(i.seq) FROM input i WHERE i.ord = o.ord))
         FROM checked c JOIN ops o ON o.ord = c.ord
        WHERE r.run_id = c.run_id AND ${mayApply}
       RETURNING o.ord, r.run_id, o.epoch, greatest(c.journal_seq, c.checkpoint_seq) AS prior
     ), inserted AS (
       INSERT INTO ${names.journal} (run_id, epoch, seq, entry)
       SELECT f.run_id, f.epoch, i.seq, i.entry
         FROM fenced f JOIN input i ON i.ord = f.ord
        WHERE (f.prior IS NULL OR i.seq > f.prior)
          AND (i.earlier IS NULL OR i.seq > i.earlier)
       ON CONFLICT (run_id, seq) DO NOTHING
     )
     SELECT o.ord, ${fenceCheckColumns(names)}, f.ord IS NOT NULL
       FROM ops o LEFT JOIN checked c ON c.ord = o.ord LEFT JOIN fenced f ON f.ord = o.ord
      ORDER BY o.ord`,
    [
      JSON.stringify(
        writes.map(({ fence, entries }, ord) => ({ ...fenceRow(ord, fence), entries })),
      ),
    ],
  );
  return writes.map(({ fence }, ord) => {
    const row = rows[ord]!;
    if (row[6] === true) return undefined;
    // An append names no status: a run in a final status refuses it, so a refusal is always an error.
    const refusal = refusalOf(fence, fenceCheckOf(row, 1), {});
    if (refusal === 'busy') return refusal;
    return refusal instanceof LeaseLostError
      ? refusal
      : new LeaseLostError(fence.runId, fence.epoch);
  });
}
