import { RunNotFoundError, type RunFilter, type RunRecord } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';
import { decodeRun, holderGoneColumn, runColumnCount, runColumns, withHolderGone } from '../row.js';

/**
 * Runs matching the filter, oldest first (by `created_seq`); an absent filter field matches everything. `after`
 * keeps the runs created after that run: `RunNotFoundError` when it is not stored, told in the same statement (one
 * snapshot) by the row the page is left-joined to, which comes back even when the page is empty. Ordered by the
 * table's column: the select list's `created_seq::text` is also named `created_seq`, and would sort as text.
 */
export async function listRuns(db: Db, names: Names, filter: RunFilter): Promise<RunRecord[]> {
  const statuses =
    filter.status === undefined
      ? null
      : typeof filter.status === 'string'
        ? [filter.status]
        : filter.status;
  const rows = await query(
    db,
    `WITH anchor AS (
       SELECT a.created_seq FROM ${names.runs} a WHERE a.run_id = $5::text
     ), page AS (
       SELECT ${runColumns(names, 'r')}, ${holderGoneColumn(names, 'r')}, r.created_seq AS list_order
         FROM ${names.runs} r
        WHERE ($1::text IS NULL OR status IN (SELECT jsonb_array_elements_text($1::text::jsonb)))
          AND ($2::text IS NULL OR kind = $2::text)
          AND ($3::text IS NULL OR name = $3::text)
          AND ($5::text IS NULL OR r.created_seq > (SELECT a.created_seq FROM anchor a))
        ORDER BY r.created_seq
        LIMIT $4::bigint
     )
     SELECT p.*, $5::text IS NULL OR EXISTS (SELECT 1 FROM anchor)
       FROM (SELECT 1) AS one LEFT JOIN page p ON true
      ORDER BY p.list_order`,
    [
      statuses === null ? null : JSON.stringify(statuses),
      filter.kind ?? null,
      filter.name ?? null,
      filter.limit ?? null,
      filter.after ?? null,
    ],
  );
  if (rows[0]?.[runColumnCount + 2] === false) throw new RunNotFoundError(filter.after!);
  // The one row of an empty page holds no run; one run whose rows were changed behind the store's back does not
  // hide the others: its snapshot is null.
  return rows
    .filter((row) => row[0] !== null)
    .map((row) => withHolderGone(decodeRun(row, 'null'), row[runColumnCount]));
}
