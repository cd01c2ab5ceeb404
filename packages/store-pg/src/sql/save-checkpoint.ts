import type { CairnError, Checkpoint, Fence, JsonValue, LeaseLostError } from '@cairn/sdk';
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
import { finalStatusList } from '../row.js';
import type { ItemsWrite } from '../snapshot-items.js';
import type { StreamRow } from './append-stream.js';
import {
  carriedFollows,
  carriedGap,
  carriedHead,
  carriedInsert,
  carriedRows,
} from './carried-stream.js';

/** One run's checkpoint: the snapshot without its long arrays, and what to write of those. */
export interface CheckpointWrite {
  fence: Fence;
  checkpoint: Checkpoint;
  inline: JsonValue;
  items: ItemsWrite;
  /** The stream chunks the checkpoint carries (`Checkpoint.stream`), their parts already JSON text. */
  stream: readonly StreamRow[];
}

/**
 * What a save did: applied (the new snapshot version, and whether the mailbox holds a signal above the cursor
 * it left); `unchanged` (its run already has this final status); `held` (its `unlessMail` found unconsumed
 * signals: nothing written); refused by its fence; or `stale` (the snapshot version its delta assumed is no
 * longer stored).
 */
export type SaveOutcome =
  | { type: 'saved'; version: number; mail: boolean }
  | { type: 'unchanged' }
  | { type: 'held' }
  | { type: 'refused'; error: LeaseLostError | CairnError }
  | { type: 'stale' }
  | { type: 'busy' };

/**
 * Writes the checkpoints of several runs in one statement, each checked on its own (see `fence.ts`): the
 * snapshot without its long arrays, the arrays' new elements into `snapshot_chunks` (after the removal of
 * the rows they replace), and the removal of the journal up to the checkpoint's `journalSeq`. A checkpoint older
 * than the stored one is refused, and one with `items.expectedVersion` applies only if that is still its
 * run's stored version. One with `unlessMail` applies only if its run's mailbox holds no signal above the
 * cursor (see `mailGuard`). The batcher never sends two writes of one run together; each write is still fenced
 * and reported by its own `ord`.
 */
export async function saveCheckpoints(
  db: Db,
  names: Names,
  writes: readonly CheckpointWrite[],
  wait: boolean,
): Promise<SaveOutcome[]> {
  const ops = writes.map(({ fence, checkpoint, inline, items }, ord) => ({
    ...fenceRow(ord, fence),
    status: checkpoint.status,
    signature: checkpoint.signature,
    snapshot: inline === null ? null : JSON.stringify(inline),
    output: checkpoint.output === undefined ? null : JSON.stringify(checkpoint.output),
    has_output: checkpoint.output !== undefined,
    error: checkpoint.error === undefined ? null : JSON.stringify(checkpoint.error),
    journal_seq: checkpoint.journalSeq,
    release: checkpoint.release === true && fence.root === undefined,
    expected_version: items.expectedVersion,
    trim_items: items.trim,
    unless_mail: checkpoint.unlessMail === true,
    ...waitFields(checkpoint),
    stream_first: writes[ord]!.stream[0]?.position ?? null,
  }));
  const chunks = writes.flatMap(({ items }, ord) =>
    items.chunks.map(({ path, idx, items: elements }) => ({
      ord,
      path,
      idx,
      items: JSON.stringify(elements),
    })),
  );
  const cuts = writes.flatMap(({ items }, ord) => items.cuts.map((cut) => ({ ord, ...cut })));
  const rows = await query(
    db,
    `WITH ops AS (
       SELECT * FROM jsonb_to_recordset($1::text::jsonb) AS o(
         ${fenceColumns}, status text, signature text, snapshot text, output text,
         has_output boolean, error text, journal_seq bigint, release boolean, expected_version bigint,
         trim_items boolean, unless_mail boolean, wait_until float8, wait_signals text[], wait_detail text,
         signals_consumed bigint, stream_first bigint)
     ), ${lockedRuns(names, wait)}, ${checkedWrites()}, ${carriedHead(names)}, guard AS (
       SELECT c.ord, ${mailGuard(names, {
         unlessMail: 'o.unless_mail',
         runSeq: 't.created_seq',
         stored: 't.signals_consumed',
         consumed: 'o.signals_consumed',
       })} AS held
         FROM checked c JOIN ops o ON o.ord = c.ord JOIN locked t ON t.run_id = c.run_id
     ), fenced AS (
       UPDATE ${names.runs} r
          SET status = o.status, signature = o.signature, snapshot = o.snapshot,
              output = CASE WHEN o.has_output THEN coalesce(o.output, 'null') END, error = o.error,
              checkpoint_seq = o.journal_seq,
              -- What the checkpoint supersedes leaves the row's journal (usually all of it); each line
              -- starts with its seq.
              journal = ${journalAfter('c.journal_seq', 'o.journal_seq')},
              owner = CASE WHEN o.release THEN NULL ELSE r.owner END,
              lease_until = CASE WHEN o.release THEN NULL ELSE r.lease_until END,
              lease_ms = CASE WHEN o.release THEN NULL ELSE r.lease_ms END,
              holder_session = CASE WHEN o.release THEN NULL ELSE r.holder_session END,
              ${waitAssignments(names, {
                status: 'o.status',
                until: 'o.wait_until',
                signals: 'o.wait_signals',
                detail: 'o.wait_detail',
                consumed: 'o.signals_consumed',
              })},
              updated_at = clock_timestamp(), snapshot_version = r.snapshot_version + 1
         FROM checked c JOIN ops o ON o.ord = c.ord JOIN guard g ON g.ord = c.ord
        WHERE r.run_id = c.run_id AND ${mayApply} AND NOT g.held
          AND (c.checkpoint_seq IS NULL OR c.checkpoint_seq <= o.journal_seq)
          AND (o.expected_version IS NULL OR c.snapshot_version = o.expected_version)
          AND ${carriedFollows}
       RETURNING o.ord, r.run_id, r.created_seq, r.snapshot_version, o.journal_seq, o.trim_items,
                 r.signals_consumed, o.signals_consumed IS NOT NULL AS consumes,
                 -- What it supersedes in the journal table is hidden from loads at once and deleted in
                 -- bulk: at the end of the run, and every 32 seqs.
                 o.status IN ${finalStatusList}
                   OR o.journal_seq / 32 > coalesce(c.checkpoint_seq, -1) / 32 AS trim_journal
     ), superseded AS (
       DELETE FROM ${names.journal} j USING fenced f
        WHERE f.trim_journal AND j.run_id = f.run_id AND j.seq <= f.journal_seq
     ), ${consumedSignals(names)}, cut AS (
       DELETE FROM ${names.snapshotChunks} s
        USING (SELECT f.created_seq, k.path, k.after
                 FROM fenced f JOIN jsonb_to_recordset($3::text::jsonb) AS k(ord int, path text, after int)
                   ON k.ord = f.ord) k
        WHERE s.run_seq = k.created_seq AND s.path = k.path AND s.idx > k.after
     ), trimmed AS (
       DELETE FROM ${names.snapshotChunks} s USING fenced f
        WHERE f.trim_items AND s.run_seq = f.created_seq
     ), written AS (
       -- No key to conflict on: the rows a chunk replaces were cut above (one statement, one snapshot).
       INSERT INTO ${names.snapshotChunks} (run_seq, path, idx, items)
       SELECT f.created_seq, x.path, x.idx, x.items
         FROM fenced f
         JOIN jsonb_to_recordset($2::text::jsonb) AS x(ord int, path text, idx int, items text)
           ON x.ord = f.ord
     ), ${carriedInsert(names, '$4')}
     SELECT o.ord, ${fenceCheckColumns(names)}, f.snapshot_version::float8, coalesce(g.held, false),
            ${mailAfter(names)}, h.highest::float8
       FROM ops o LEFT JOIN checked c ON c.ord = o.ord LEFT JOIN guard g ON g.ord = o.ord
            LEFT JOIN fenced f ON f.ord = o.ord LEFT JOIN head h ON h.ord = o.ord
      ORDER BY o.ord`,
    [JSON.stringify(ops), JSON.stringify(chunks), JSON.stringify(cuts), carriedRows(writes)],
  );
  return writes.map(({ fence, checkpoint, stream }, ord) =>
    saveOutcomeOf(fence, checkpoint, rows[ord]!, stream),
  );
}

/** A checkpoint's wait and mailbox cursor, as the values of a save statement (a wait only with `waiting`). */
export function waitFields(checkpoint: Checkpoint) {
  const wait = checkpoint.status === 'waiting' ? checkpoint.wait : undefined;
  return {
    wait_until: wait?.until ?? null,
    wait_signals: wait?.signals ?? null,
    wait_detail: wait?.detail === undefined ? null : JSON.stringify(wait.detail),
    signals_consumed: checkpoint.signalsConsumed ?? null,
  };
}

/**
 * The SET items of a save for the run `r` (each argument a SQL expression of the write's values): the wait
 * (cleared by any other status), the mailbox cursor, raised to the given one but never past the last signal
 * given nor lowered, and whether the mailbox left above it holds a signal the wait names. That last is asked
 * of `wait_woken`, which reads with a snapshot taken after the row was locked: a signal that committed while
 * this save waited for the row is seen, so it wakes the wait. A checkpoint also ends a run of stalled attempts
 * (`stalls`).
 */
export function waitAssignments(
  names: Names,
  write: { status: string; until: string; signals: string; detail: string; consumed: string },
): string {
  // The highest seq given is the last signal's, or the cursor when every signal above it was consumed and
  // deleted. Read with the statement's snapshot: every signal the holder saw (and may consume) is in it.
  const cursor = `CASE WHEN ${write.consumed} IS NULL THEN r.signals_consumed
                       ELSE greatest(r.signals_consumed, least(${write.consumed},
                              (SELECT coalesce(max(s.seq), 0) FROM ${names.signals} s
                                WHERE s.run_seq = r.created_seq))) END`;
  return `wait_until = ${write.until}, wait_signals = ${write.signals}, wait_detail = ${write.detail},
              signals_consumed = ${cursor}, stalls = 0,
              woken = CASE WHEN ${write.status} = 'waiting'
                           THEN ${names.quotedSchema}.wait_woken(r.created_seq, ${cursor}, ${write.signals})
                           ELSE false END`;
}

/**
 * A CTE `consumed` deleting, for the saves in `fenced` (with `created_seq`, `signals_consumed` and
 * `consumes`), the consumed signals that have no idempotency key: nothing reads them again. Keyed ones stay, so
 * their key is remembered for the life of the incarnation.
 */
export function consumedSignals(names: Names): string {
  return `consumed AS (
       DELETE FROM ${names.signals} s USING fenced f
        WHERE f.consumes AND s.run_seq = f.created_seq AND s.seq <= f.signals_consumed
          AND s.idempotency_key IS NULL
     )`;
}

/**
 * The SQL of a save's guard (each argument a SQL expression; the write's checked row is `c`): true when the
 * write has `unlessMail`, would otherwise apply (so a fenced-out write is still refused by its fence), and the
 * mailbox of incarnation `runSeq` holds a signal above the higher of the stored cursor and the write's. Asked
 * of `mail_above`, which reads with a snapshot taken when it is called: evaluate it only from rows already
 * locked (a CTE over the locking one), so a signal whose transaction held the row and committed while this
 * save waited for it is seen; the statement's own snapshot would miss it.
 */
export function mailGuard(
  names: Names,
  write: { unlessMail: string; runSeq: string; stored: string; consumed: string },
): string {
  return `CASE WHEN ${write.unlessMail} AND ${mayApply}
               THEN ${names.quotedSchema}.mail_above(${write.runSeq},
                      greatest(${write.stored}, coalesce(${write.consumed}, 0)))
               ELSE false END`;
}

/**
 * The SQL of a receipt's `mail` for the write in `fenced f` (NULL when it did not apply): the mailbox holds a
 * signal above the cursor the write left. No signal can arrive meanwhile: the row is locked.
 */
export function mailAfter(names: Names): string {
  return `CASE WHEN f.created_seq IS NOT NULL
               THEN ${names.quotedSchema}.mail_above(f.created_seq, f.signals_consumed) END`;
}

/**
 * What a save statement's result row (the write's `ord`, the five `fenceCheckColumns`, the new snapshot
 * version or NULL, whether its `mailGuard` held it, `mailAfter`, then the stream's highest position when it
 * carried chunks) says of the write. A held write passed
 * its fence (the guard asks only then), so it answers before the checks of a newer checkpoint and versions.
 */
export function saveOutcomeOf(
  fence: Fence,
  checkpoint: Checkpoint,
  row: readonly unknown[],
  stream: readonly StreamRow[],
): SaveOutcome {
  if (typeof row[6] === 'number') return { type: 'saved', version: row[6], mail: row[8] === true };
  if (row[7] === true) return { type: 'held' };
  // The chunks it carried would have left a gap: refused as an append would be, nothing written.
  const gap = carriedGap(fence, row[9], stream);
  if (gap !== undefined) return { type: 'refused', error: gap };
  const refusal = refusalOf(fence, fenceCheckOf(row, 1), checkpoint);
  if (refusal === 'unchanged') return { type: 'unchanged' };
  if (refusal === 'busy') return { type: 'busy' };
  if (refusal !== undefined) return { type: 'refused', error: refusal };
  return { type: 'stale' };
}

/**
 * The SQL of what a checkpoint up to `seq` leaves of the row's journal `r.journal` (whose highest seq is
 * `journalSeq`): usually nothing; else the lines above `seq`, read off each line's leading seq.
 */
export function journalAfter(journalSeq: string, seq: string): string {
  return `CASE WHEN r.journal = '' OR ${journalSeq} <= ${seq} THEN ''
               ELSE coalesce((SELECT string_agg(l || E'\\n', '' ORDER BY n)
                                FROM regexp_split_to_table(rtrim(r.journal, E'\\n'), E'\\n')
                                     WITH ORDINALITY AS t(l, n)
                               WHERE substring(l FROM '^\\{"seq":(-?\\d+)')::bigint > ${seq}), '') END`;
}
