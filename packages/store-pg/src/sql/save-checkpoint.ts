import type { Checkpoint } from '@cairn/sdk';
import { jsonParam, query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * Writes a checkpoint at `epoch` and drops the journal it supersedes, in one statement.
 * False when the epoch is not the run's current one (or the run is gone): the lease is lost.
 */
export async function saveCheckpoint(
  db: Db,
  names: Names,
  runId: string,
  epoch: number,
  checkpoint: Checkpoint,
): Promise<boolean> {
  const rows = await query(
    db,
    `WITH fenced AS (
       UPDATE ${names.runs}
          SET status = $3::text, signature = $4::text, snapshot = $5::text::jsonb,
              output = $6::text::jsonb, error = $7::text::jsonb, updated_at = clock_timestamp()
        WHERE run_id = $1::text AND epoch = $2::bigint
       RETURNING run_id
     ), superseded AS (
       DELETE FROM ${names.journal} j USING fenced f WHERE j.run_id = f.run_id
     )
     SELECT count(*)::int FROM fenced`,
    [
      runId,
      epoch,
      checkpoint.status,
      checkpoint.signature,
      jsonParam(checkpoint.snapshot),
      jsonParam(checkpoint.output),
      jsonParam(checkpoint.error),
    ],
  );
  return rows[0]?.[0] === 1;
}
