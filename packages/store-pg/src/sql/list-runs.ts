import type { RunFilter, RunRecord } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';
import { decodeRun, holderGoneColumn, runColumnCount, runColumns, withHolderGone } from '../row.js';

/**
 * Runs matching the filter, oldest first; an absent filter field matches everything. Ordered by the table's
 * column (`r.`): the select list's `created_seq::text` is also named `created_seq`, and would sort as text.
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
    `SELECT ${runColumns(names, 'r')}, ${holderGoneColumn(names, 'r')} FROM ${names.runs} r
      WHERE ($1::text IS NULL OR status IN (SELECT jsonb_array_elements_text($1::text::jsonb)))
        AND ($2::text IS NULL OR kind = $2::text)
        AND ($3::text IS NULL OR name = $3::text)
      ORDER BY r.created_seq
      LIMIT $4::bigint`,
    [
      statuses === null ? null : JSON.stringify(statuses),
      filter.kind ?? null,
      filter.name ?? null,
      filter.limit ?? null,
    ],
  );
  // One run whose rows were changed behind the store's back does not hide the others: its snapshot is null.
  return rows.map((row) => withHolderGone(decodeRun(row, 'null'), row[runColumnCount]));
}
