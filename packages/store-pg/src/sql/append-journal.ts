import { LeaseLostError, type CairnError, type Fence, type JournalEntry } from '@cairn/sdk';
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
import type { StreamRow } from './append-stream.js';
import {
  carriedFollows,
  carriedGap,
  carriedHead,
  carriedInsert,
  carriedRows,
} from './carried-stream.js';

/** One run's append: its entries, and the stream chunks it carries, under its fence. */
export interface JournalWrite {
  fence: Fence;
  entries: readonly JournalEntry[];
  stream: readonly StreamRow[];
}

/**
 * The most a run's row keeps of its journal (bytes of its lines): an append that would pass it writes
 * its entries to the journal table instead, so no append rewrites more than this of the row.
 */
export const inlineJournalBytes = 1536;

/**
 * Appends the journal entries of several runs in one statement, each checked on its own (see `fence.ts`).
 * Entries go into the run's row (`runs.journal`, emptied by the next checkpoint) when they fit under
 * `inlineJournalBytes`, else into the journal table. An entry whose seq is not above the highest seq appended
 * to its run so far (`runs.journal_seq`, kept across checkpoints) or above an earlier entry of the same write is
 * skipped, so a retried append never duplicates an entry. A write with an entry at or below the stored
 * checkpoint's `checkpoint_seq` is refused whole (made from an older checkpoint, or one that lied), so its marks
 * are never reported written when they were not. Returns, per write, undefined when it applied, `busy` when its
 * row was skipped (without `wait`: send it again on its own), or why it was refused.
 */
export async function appendJournals(
  db: Db,
  names: Names,
  writes: readonly JournalWrite[],
  wait: boolean,
): Promise<Array<LeaseLostError | CairnError | 'busy' | undefined>> {
  const rows = await query(
    db,
    `WITH ops AS (
       SELECT * FROM jsonb_to_recordset($1::text::jsonb)
                AS o(${fenceColumns}, entries jsonb, stream_first bigint)
     ), ${lockedRuns(names, wait)}, ${checkedWrites()}, ${carriedHead(names)}, input AS (
       SELECT o.ord, (e ->> 'seq')::bigint AS seq, e ->> 'line' AS line,
              max((e ->> 'seq')::bigint) OVER (PARTITION BY o.ord ORDER BY n
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS earlier
         FROM ops o, jsonb_array_elements(o.entries) WITH ORDINALITY AS t(e, n)
     ), superseded AS (
       SELECT DISTINCT i.ord FROM input i JOIN checked c ON c.ord = i.ord WHERE i.seq <= c.checkpoint_seq
     ), accepted AS (
       SELECT i.ord, i.seq, i.line
         FROM input i JOIN checked c ON c.ord = i.ord
        WHERE (c.journal_seq IS NULL OR i.seq > c.journal_seq)
          AND (i.earlier IS NULL OR i.seq > i.earlier)
     ), placed AS (
       SELECT a.ord, a.lines, c.journal_bytes + octet_length(a.lines) <= ${inlineJournalBytes} AS inline
         FROM (SELECT ord, string_agg(line || E'\\n', '' ORDER BY seq) AS lines FROM accepted GROUP BY ord) a
         JOIN checked c ON c.ord = a.ord
     ), fenced AS (
       UPDATE ${names.runs} r
          SET updated_at = clock_timestamp(),
              journal_seq = greatest(r.journal_seq, (SELECT max(i.seq) FROM input i WHERE i.ord = o.ord)),
              journal = CASE WHEN p.inline THEN r.journal || p.lines ELSE r.journal END
         FROM checked c JOIN ops o ON o.ord = c.ord LEFT JOIN placed p ON p.ord = c.ord
        WHERE r.run_id = c.run_id AND ${mayApply} AND o.ord NOT IN (SELECT s.ord FROM superseded s)
          AND ${carriedFollows}
       RETURNING o.ord, r.run_id, r.created_seq, o.epoch, p.inline = false AS spilled
     ), spilled AS (
       INSERT INTO ${names.journal} (run_id, epoch, seq, entry)
       SELECT f.run_id, f.epoch, a.seq, a.line
         FROM fenced f JOIN accepted a ON a.ord = f.ord
        WHERE f.spilled
     ), ${carriedInsert(names, '$2')}
     SELECT o.ord, ${fenceCheckColumns(names)}, f.ord IS NOT NULL, h.highest::float8
       FROM ops o LEFT JOIN checked c ON c.ord = o.ord LEFT JOIN fenced f ON f.ord = o.ord
            LEFT JOIN head h ON h.ord = o.ord
      ORDER BY o.ord`,
    [
      JSON.stringify(
        writes.map(({ fence, entries, stream }, ord) => ({
          ...fenceRow(ord, fence),
          entries: entries.map((entry) => ({
            seq: entry.seq,
            line: lineOf(entry),
          })),
          stream_first: stream[0]?.position ?? null,
        })),
      ),
      carriedRows(writes),
    ],
  );
  return writes.map(({ fence, entries, stream }, ord) =>
    appendOutcomeOf(fence, rows[ord]!, entries, stream),
  );
}

/**
 * What an append statement's result row (the write's `ord`, the five `fenceCheckColumns`, whether it applied,
 * then the stream's highest position when it carried chunks) says of the write: undefined when it applied,
 * `busy` when its row was skipped, else why it was refused.
 */
export function appendOutcomeOf(
  fence: Fence,
  row: readonly unknown[],
  entries: readonly JournalEntry[],
  stream: readonly StreamRow[],
): LeaseLostError | CairnError | 'busy' | undefined {
  if (row[6] === true) return undefined;
  // The chunks it carried would have left a gap: refused as a stream append would be, nothing written.
  const gap = carriedGap(fence, row[7], stream);
  if (gap !== undefined) return gap;
  // An append names no status: a run in a final status refuses it, so a refusal is always an error. One with an
  // entry at or below the stored checkpoint is refused as a checkpoint older than it is.
  const first = Math.min(...entries.map((entry) => entry.seq));
  const refusal = refusalOf(fence, fenceCheckOf(row, 1), { journalSeq: first - 1 });
  if (refusal === 'busy') return refusal;
  return refusal instanceof LeaseLostError ? refusal : new LeaseLostError(fence.runId, fence.epoch);
}

/** An entry as one line of JSON text, `seq` first so that a checkpoint can read it off the line. */
export function lineOf(entry: JournalEntry): string {
  const { seq, ...rest } = entry;
  return JSON.stringify({ seq, ...rest });
}
