/**
 * The stream chunks a checkpoint or a journal append carries (`Checkpoint.stream`, `append`'s `stream`): the SQL
 * fragments the four write statements share, and the gap check of their result. The chunks are inserted by the
 * write's own statement, after its lock and only when it applies; chunks at or below the stream's highest
 * position (read after the lock) are skipped, as a stream append skips them, and a write whose first chunk would
 * leave a gap does not apply.
 */
import { streamGapError, type CairnError, type Fence } from '@cairn/sdk';
import type { Names } from '../names.js';
import type { StreamRow } from './append-stream.js';

/**
 * A batch statement's CTE `head`: the stream position of each write of `ops` (with a `stream_first` column)
 * that carries chunks, by `ord`, read over the locked rows of `checked` and `locked`.
 */
export function carriedHead(names: Names): string {
  return `head AS (
       SELECT c.ord, ${names.streamPosition}(t.created_seq) AS highest
         FROM checked c JOIN ops o ON o.ord = c.ord JOIN locked t ON t.run_id = c.run_id
        WHERE o.stream_first IS NOT NULL
     )`;
}

/** A batch statement's condition (in its update's WHERE) that a write's chunks follow its stream. */
export const carriedFollows = `(o.stream_first IS NULL
               OR o.stream_first <= (SELECT h.highest FROM head h WHERE h.ord = c.ord) + 1)`;

/**
 * A batch statement's CTE `streamed`: the chunks of the writes that applied (`fenced`, with `ord` and
 * `created_seq`), from its JSON parameter `param` (`carriedRows`).
 */
export function carriedInsert(names: Names, param: string): string {
  return `streamed AS (
       INSERT INTO ${names.runStream} (run_seq, position, at, unit, part)
       SELECT f.created_seq, i.position, i.at, i.unit, i.part
         FROM fenced f JOIN head h ON h.ord = f.ord
         JOIN jsonb_to_recordset(${param}::text::jsonb)
                AS i(ord int, position bigint, at float8, unit text, part text) ON i.ord = f.ord
        WHERE i.position > h.highest
     )`;
}

/** The chunks of a batch's writes as its JSON parameter, each tagged with its write's `ord`. */
export function carriedRows(writes: ReadonlyArray<{ stream: readonly StreamRow[] }>): string {
  return JSON.stringify(
    writes.flatMap(({ stream }, ord) => stream.map((chunk) => ({ ord, ...chunk }))),
  );
}

/**
 * The same for a one-row statement: `head` over its locked row `c` (when `first`, the parameter of the first
 * chunk's position, is not null), the condition, and `streamed` from the applied `fenced` and the array
 * parameters of `params`.
 */
export const carriedOne = {
  head: (names: Names, first: string) => `head AS (
       SELECT ${names.streamPosition}(c.created_seq) AS highest FROM c WHERE ${first}::bigint IS NOT NULL
     )`,
  follows: (first: string) =>
    `(${first}::bigint IS NULL OR ${first}::bigint <= (SELECT highest FROM head) + 1)`,
  insert: (
    names: Names,
    [positions, ats, units, parts]: readonly [string, string, string, string],
  ) =>
    `streamed AS (
       INSERT INTO ${names.runStream} (run_seq, position, at, unit, part)
       SELECT f.created_seq, i.position, i.at, i.unit, i.part
         FROM fenced f, unnest(${positions}::bigint[], ${ats}::float8[], ${units}::text[], ${parts}::text[])
                AS i(position, at, unit, part)
        WHERE i.position > (SELECT highest FROM head)
     )`,
  /** The parameters of a one-row statement's chunks: the first position, then the four arrays. */
  params: (stream: readonly StreamRow[]) => [
    stream[0]?.position ?? null,
    stream.map((chunk) => chunk.position),
    stream.map((chunk) => chunk.at),
    stream.map((chunk) => chunk.unit),
    stream.map((chunk) => chunk.part),
  ],
};

/**
 * The gap a write that did not apply would have left, from the stream's highest position its statement read (a
 * number only when the write carried chunks): refused as a stream append is, or undefined.
 */
export function carriedGap(
  fence: Fence,
  highest: unknown,
  stream: readonly StreamRow[],
): CairnError | undefined {
  const first = stream[0]?.position;
  return typeof highest === 'number' && first !== undefined && first > highest + 1
    ? streamGapError(fence.runId, highest, first)
    : undefined;
}
