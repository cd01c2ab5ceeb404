import { LeaseLostError, streamGapError, type CairnError, type Fence } from '@cairn/sdk';
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

/** A stream chunk as its row stores it: the part already JSON text. */
export interface StreamRow {
  position: number;
  unit: string;
  /** The part's JSON text. */
  part: string;
  at: number;
}

/** One run's stream append: its chunks (checked: positions one apart), under its fence. */
export interface StreamWrite {
  fence: Fence;
  chunks: readonly StreamRow[];
}

/**
 * Appends the stream chunks of several runs in one statement, each checked on its own (see `fence.ts`): the
 * fence check and the insert are one statement, so a holder that lost its lease never inserts a row. The runs
 * row is locked, never updated: a run's highest position is its stream's last primary key entry, read by
 * `stream_position` after the lock (an append whose transaction held the lock and committed meanwhile is
 * counted). Chunks at or below it are skipped, so a retried append adds nothing twice; a write whose first
 * chunk is past the next position writes nothing. Returns, per write, undefined when it applied, `busy` when its
 * row was skipped (without `wait`: send it again on its own), the gap error, or why it was refused.
 */
export async function appendStreams(
  db: Db,
  names: Names,
  writes: readonly StreamWrite[],
  wait: boolean,
): Promise<Array<CairnError | 'busy' | undefined>> {
  const chunks = writes.flatMap(({ chunks }, ord) => chunks.map((chunk) => ({ ord, chunk })));
  const rows = await query(
    db,
    `WITH ops AS (
       SELECT * FROM jsonb_to_recordset($1::text::jsonb) AS o(${fenceColumns}, first_position bigint)
     ), ${lockedRuns(names, wait)}, ${checkedWrites()}, head AS (
       -- Over the locked rows, so stream_position reads after the lock; only for writes that may apply.
       SELECT c.ord, t.created_seq, ${names.streamPosition}(t.created_seq) AS highest
         FROM checked c JOIN locked t ON t.run_id = c.run_id
        WHERE ${mayApply}
     ), written AS (
       INSERT INTO ${names.runStream} (run_seq, position, at, unit, part)
       SELECT h.created_seq, i.position, i.at, i.unit, i.part
         FROM head h JOIN ops o ON o.ord = h.ord
         JOIN unnest($2::int[], $3::bigint[], $4::float8[], $5::text[], $6::text[])
                AS i(ord, position, at, unit, part) ON i.ord = h.ord
        WHERE o.first_position <= h.highest + 1 AND i.position > h.highest
     )
     SELECT o.ord, ${fenceCheckColumns(names)}, h.highest::float8
       FROM ops o LEFT JOIN checked c ON c.ord = o.ord LEFT JOIN head h ON h.ord = o.ord
      ORDER BY o.ord`,
    [
      JSON.stringify(
        writes.map(({ fence, chunks }, ord) => ({
          ...fenceRow(ord, fence),
          first_position: chunks[0]?.position ?? null,
        })),
      ),
      chunks.map(({ ord }) => ord),
      chunks.map(({ chunk }) => chunk.position),
      chunks.map(({ chunk }) => chunk.at),
      chunks.map(({ chunk }) => chunk.unit),
      chunks.map(({ chunk }) => chunk.part),
    ],
  );
  return writes.map((write, ord) => streamOutcomeOf(write, rows[ord]!));
}

/**
 * What the statement's result row (the write's `ord`, the five `fenceCheckColumns`, then the run's highest
 * position when the write could apply) says of the write.
 */
function streamOutcomeOf(
  { fence, chunks }: StreamWrite,
  row: readonly unknown[],
): CairnError | 'busy' | undefined {
  const highest = row[6] as number | null;
  if (highest !== null) {
    const first = chunks[0]?.position;
    return first !== undefined && first > highest + 1
      ? streamGapError(fence.runId, highest, first)
      : undefined;
  }
  // An append names no status: a run in a final status refuses it, so a refusal is always an error.
  const refusal = refusalOf(fence, fenceCheckOf(row, 1), {});
  if (refusal === 'busy') return refusal;
  return refusal instanceof LeaseLostError ? refusal : new LeaseLostError(fence.runId, fence.epoch);
}
