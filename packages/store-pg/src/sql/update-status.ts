import { LeaseLostError, type Fence, type StatusUpdate } from '@cairn/sdk';
import { jsonParam, query, type Db } from '../db.js';
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

/**
 * Changes status and error under the fence (see `fence.ts`), keeping snapshot and journal, and clears the
 * wait: a run starts waiting only by a checkpoint. Undefined when it
 * applied, or when the run already has this final status (a retried write); else why it was refused.
 */
export async function updateStatus(
  db: Db,
  names: Names,
  fence: Fence,
  update: StatusUpdate,
): Promise<LeaseLostError | undefined> {
  const rows = await query(
    db,
    `WITH ops AS (
       SELECT * FROM jsonb_to_recordset($1::text::jsonb) AS o(${fenceColumns})
     ), ${lockedRuns(names, true)}, ${checkedWrites()}, fenced AS (
       UPDATE ${names.runs} r
          SET status = $2::text, error = $3::text, updated_at = clock_timestamp(),
              wait_until = NULL, wait_signals = NULL, wait_detail = NULL, woken = false
         FROM checked c
        WHERE r.run_id = c.run_id AND ${mayApply}
       RETURNING c.ord
     )
     SELECT o.ord, ${fenceCheckColumns(names)}, f.ord IS NOT NULL
       FROM ops o LEFT JOIN checked c ON c.ord = o.ord LEFT JOIN fenced f ON f.ord = o.ord`,
    [JSON.stringify([fenceRow(0, fence)]), update.status, jsonParam(update.error)],
  );
  const row = rows[0]!;
  if (row[6] === true) return undefined;
  const refusal = refusalOf(fence, fenceCheckOf(row, 1), { status: update.status });
  if (refusal === 'unchanged') return undefined;
  return refusal === undefined || refusal === 'busy'
    ? new LeaseLostError(fence.runId, fence.epoch)
    : refusal;
}
