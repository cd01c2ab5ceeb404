import { query, type Db } from '../db.js';
import { mayApply } from '../fence.js';
import type { Names } from '../names.js';
import { finalStatusList } from '../row.js';
import {
  consumedSignals,
  journalAfter,
  mailAfter,
  mailGuard,
  saveOutcomeOf,
  waitAssignments,
  waitFields,
  type CheckpointWrite,
  type SaveOutcome,
} from './save-checkpoint.js';
import { carriedOne } from './carried-stream.js';

/**
 * The checkpoint of one root run, alone: what `saveCheckpoints` does for a batch of one, as a statement of
 * scalar and array parameters that locks one row and updates it, without the batch's JSON decoding and
 * joins. A sequential run pays only for this. Without `wait`, a row another transaction holds is skipped and
 * reported `busy`, as in a batch. A child run's checkpoint (fenced by its root too) goes through
 * `saveCheckpoints`.
 */
export async function saveOne(
  db: Db,
  names: Names,
  { fence, checkpoint, inline, items, stream }: CheckpointWrite,
  wait: boolean,
): Promise<SaveOutcome> {
  const waiting = waitFields(checkpoint);
  const rows = await query(
    db,
    `WITH c AS (
       SELECT r.run_id, r.status, r.checkpoint_seq, r.journal_seq, r.snapshot_version, r.created_seq,
              r.signals_consumed, r.created_seq::text = $2::text AND r.epoch = $3::bigint AS fenced
         FROM ${names.runs} r WHERE r.run_id = $1::text FOR UPDATE${wait ? '' : ' SKIP LOCKED'}
     ), ${carriedOne.head(names, '$24')}, guard AS (
       -- Over the locked row, so its mail_above reads after the lock (see mailGuard).
       SELECT ${mailGuard(names, {
         unlessMail: '$23::boolean',
         runSeq: 'c.created_seq',
         stored: 'c.signals_consumed',
         consumed: '$22::bigint',
       })} AS held
         FROM c
     ), fenced AS (
       UPDATE ${names.runs} r
          SET status = $4::text, signature = $5::text, snapshot = $6::text,
              output = CASE WHEN $8::boolean THEN coalesce($7::text, 'null') END,
              error = $9::text, checkpoint_seq = $10::bigint,
              journal = ${journalAfter('c.journal_seq', '$10::bigint')},
              owner = CASE WHEN $11::boolean THEN NULL ELSE r.owner END,
              lease_until = CASE WHEN $11::boolean THEN NULL ELSE r.lease_until END,
              lease_ms = CASE WHEN $11::boolean THEN NULL ELSE r.lease_ms END,
              holder_session = CASE WHEN $11::boolean THEN NULL ELSE r.holder_session END,
              ${waitAssignments(names, {
                status: '$4::text',
                until: '$19::float8',
                signals: '$20::text[]',
                detail: '$21::text',
                consumed: '$22::bigint',
              })},
              updated_at = clock_timestamp(), snapshot_version = r.snapshot_version + 1
         FROM c, guard g
        WHERE r.run_id = c.run_id AND ${mayApply} AND NOT g.held
          AND (c.checkpoint_seq IS NULL OR c.checkpoint_seq <= $10::bigint)
          AND ($12::bigint IS NULL OR c.snapshot_version = $12::bigint)
          AND ${carriedOne.follows('$24')}
       RETURNING r.created_seq, r.snapshot_version, r.signals_consumed, $22::bigint IS NOT NULL AS consumes,
                 -- As in saveCheckpoints: the journal rows it supersedes are deleted at the end and every 32 seqs.
                 $4::text IN ${finalStatusList}
                   OR $10::bigint / 32 > coalesce(c.checkpoint_seq, -1) / 32 AS trim_journal
     ), superseded AS (
       DELETE FROM ${names.journal} j USING fenced f
        WHERE f.trim_journal AND j.run_id = $1::text AND j.seq <= $10::bigint
     ), ${consumedSignals(names)}, cut AS (
       DELETE FROM ${names.snapshotChunks} s USING fenced f, unnest($17::text[], $18::int[]) AS k(path, after)
        WHERE s.run_seq = f.created_seq AND s.path = k.path AND s.idx > k.after
     ), trimmed AS (
       DELETE FROM ${names.snapshotChunks} s USING fenced f
        WHERE $13::boolean AND s.run_seq = f.created_seq
     ), written AS (
       INSERT INTO ${names.snapshotChunks} (run_seq, path, idx, items)
       SELECT f.created_seq, x.path, x.idx, x.items
         FROM fenced f, unnest($14::text[], $15::int[], $16::text[]) AS x(path, idx, items)
     ), ${carriedOne.insert(names, ['$25', '$26', '$27', '$28'])}
     SELECT 0, c.run_id IS NOT NULL, coalesce(c.fenced, false), c.status, c.checkpoint_seq::float8,
            c.run_id IS NULL AND EXISTS (SELECT 1 FROM ${names.runs} x WHERE x.run_id = $1::text),
            f.snapshot_version::float8, coalesce(g.held, false), ${mailAfter(names)},
            (SELECT highest FROM head)::float8
       FROM (SELECT 1) AS one LEFT JOIN c ON true LEFT JOIN guard g ON true LEFT JOIN fenced f ON true`,
    [
      fence.runId,
      fence.incarnation,
      fence.epoch,
      checkpoint.status,
      checkpoint.signature,
      inline === null ? null : JSON.stringify(inline),
      checkpoint.output === undefined ? null : JSON.stringify(checkpoint.output),
      checkpoint.output !== undefined,
      checkpoint.error === undefined ? null : JSON.stringify(checkpoint.error),
      checkpoint.journalSeq,
      checkpoint.release === true,
      items.expectedVersion,
      items.trim,
      items.chunks.map((chunk) => chunk.path),
      items.chunks.map((chunk) => chunk.idx),
      items.chunks.map((chunk) => JSON.stringify(chunk.items)),
      items.cuts.map((cut) => cut.path),
      items.cuts.map((cut) => cut.after),
      waiting.wait_until,
      waiting.wait_signals,
      waiting.wait_detail,
      waiting.signals_consumed,
      checkpoint.unlessMail === true,
      ...carriedOne.params(stream),
    ],
  );
  return saveOutcomeOf(fence, checkpoint, rows[0]!, stream);
}
