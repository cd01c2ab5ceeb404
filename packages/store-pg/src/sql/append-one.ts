import type { CairnError, LeaseLostError } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import { mayApply } from '../fence.js';
import type { Names } from '../names.js';
import {
  appendOutcomeOf,
  inlineJournalBytes,
  lineOf,
  type JournalWrite,
} from './append-journal.js';
import { carriedOne } from './carried-stream.js';

/**
 * The append of one root run, alone: what `appendJournals` does for a batch of one, as a statement of
 * scalar and array parameters that locks one row and updates it, without the batch's JSON decoding and
 * joins. A sequential run (one write at a time) pays only for this. Without `wait`, a row another
 * transaction holds is skipped and reported `busy`, as in a batch, and an append with an entry at or below the
 * stored checkpoint is refused, as in a batch. A child run's append (fenced by its root too) goes through
 * `appendJournals`.
 */
export async function appendOne(
  db: Db,
  names: Names,
  { fence, entries, stream }: JournalWrite,
  wait: boolean,
): Promise<LeaseLostError | CairnError | 'busy' | undefined> {
  // An entry not above an earlier one of the same write is skipped, as the batch statement does.
  const seqs: number[] = [];
  const lines: string[] = [];
  for (const entry of entries) {
    if (seqs.length > 0 && entry.seq <= seqs[seqs.length - 1]!) continue;
    seqs.push(entry.seq);
    lines.push(lineOf(entry));
  }
  const highest = entries.reduce<number | null>(
    (max, entry) => (max === null || entry.seq > max ? entry.seq : max),
    null,
  );
  const rows = await query(
    db,
    `WITH c AS (
       SELECT r.run_id, r.status, r.checkpoint_seq, r.journal_seq AS floor, r.created_seq,
              octet_length(r.journal) AS journal_bytes,
              coalesce($7::bigint <= r.checkpoint_seq, false) AS superseded,
              r.created_seq::text = $2::text AND r.epoch = $3::bigint AS fenced
         FROM ${names.runs} r WHERE r.run_id = $1::text FOR UPDATE${wait ? '' : ' SKIP LOCKED'}
     ), ${carriedOne.head(names, '$8')}, accepted AS (
       SELECT i.seq, i.line FROM c, unnest($4::bigint[], $5::text[]) AS i(seq, line)
        WHERE c.floor IS NULL OR i.seq > c.floor
     ), placed AS (
       SELECT string_agg(line || E'\\n', '' ORDER BY seq) AS lines FROM accepted
     ), fenced AS (
       UPDATE ${names.runs} r
          SET updated_at = clock_timestamp(), journal_seq = greatest(r.journal_seq, $6::bigint),
              journal = CASE WHEN c.journal_bytes + coalesce(octet_length(p.lines), 0) <= ${inlineJournalBytes}
                             THEN r.journal || coalesce(p.lines, '') ELSE r.journal END
         FROM c, placed p
        WHERE r.run_id = c.run_id AND ${mayApply} AND NOT c.superseded
          AND ${carriedOne.follows('$8')}
       RETURNING c.created_seq, c.journal_bytes + coalesce(octet_length(p.lines), 0) > ${inlineJournalBytes} AS spilled
     ), spilled AS (
       INSERT INTO ${names.journal} (run_id, epoch, seq, entry)
       SELECT $1::text, $3::bigint, a.seq, a.line FROM fenced f, accepted a WHERE f.spilled
     ), ${carriedOne.insert(names, ['$9', '$10', '$11', '$12'])}
     SELECT 0, c.run_id IS NOT NULL, coalesce(c.fenced, false), c.status, c.checkpoint_seq::float8,
            c.run_id IS NULL AND EXISTS (SELECT 1 FROM ${names.runs} x WHERE x.run_id = $1::text),
            EXISTS (SELECT 1 FROM fenced), (SELECT highest FROM head)::float8
       FROM (SELECT 1) AS one LEFT JOIN c ON true`,
    [
      fence.runId,
      fence.incarnation,
      fence.epoch,
      seqs,
      lines,
      highest,
      seqs.length === 0 ? null : Math.min(...seqs),
      ...carriedOne.params(stream),
    ],
  );
  return appendOutcomeOf(fence, rows[0]!, entries, stream);
}
