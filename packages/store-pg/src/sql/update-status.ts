import { CairnError, LeaseLostError, type Fence, type StatusUpdate } from '@cairn/sdk';
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
 * Changes status, error and (when given) stalls under the fence (see `fence.ts`), keeping snapshot and journal.
 * Any status but `waiting` clears the wait; `waiting` keeps a run that is stored waiting as it is, wait and
 * `woken` included, and is refused for any other (a run starts waiting only by a checkpoint). Undefined when it
 * applied, or when the run already has this final status (a retried write); else why it was refused.
 */
export async function updateStatus(
  db: Db,
  names: Names,
  fence: Fence,
  update: StatusUpdate,
): Promise<CairnError | undefined> {
  const rows = await query(
    db,
    `WITH ops AS (
       SELECT * FROM jsonb_to_recordset($1::text::jsonb) AS o(${fenceColumns})
     ), ${lockedRuns(names, true)}, ${checkedWrites()}, fenced AS (
       UPDATE ${names.runs} r
          SET status = $2::text, error = $3::text, updated_at = clock_timestamp(),
              stalls = coalesce($4::int, r.stalls),
              wait_until = CASE WHEN keep THEN r.wait_until END,
              wait_signals = CASE WHEN keep THEN r.wait_signals END,
              wait_detail = CASE WHEN keep THEN r.wait_detail END,
              woken = keep AND r.woken
         FROM checked c, LATERAL (SELECT $2::text = 'waiting' AS keep) k
        WHERE r.run_id = c.run_id AND ${mayApply} AND (NOT keep OR c.status = 'waiting')
       RETURNING c.ord
     )
     SELECT o.ord, ${fenceCheckColumns(names)}, f.ord IS NOT NULL
       FROM ops o LEFT JOIN checked c ON c.ord = o.ord LEFT JOIN fenced f ON f.ord = o.ord`,
    [
      JSON.stringify([fenceRow(0, fence)]),
      update.status,
      jsonParam(update.error),
      update.stalls ?? null,
    ],
  );
  const row = rows[0]!;
  if (row[6] === true) return undefined;
  const check = fenceCheckOf(row, 1);
  const refusal = refusalOf(fence, check, { status: update.status });
  if (refusal === 'unchanged') return undefined;
  if (refusal === undefined && update.status === 'waiting') {
    return new CairnError(
      'INVALID_ARGUMENT',
      `Run "${fence.runId}" is ${check.status}: a run starts waiting with a checkpoint, not a status change.`,
    );
  }
  return refusal === undefined || refusal === 'busy'
    ? new LeaseLostError(fence.runId, fence.epoch)
    : refusal;
}
