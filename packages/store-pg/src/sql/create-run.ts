import type { NewRun, RunRecord } from '@cairn/sdk';
import { jsonParam, query, type Db } from '../db.js';
import type { Names } from '../names.js';
import { decodeRun, runColumns } from '../row.js';

/** Inserts a run unless one with the same id exists; returns the stored record and whether it was new. */
export async function createRun(
  db: Db,
  names: Names,
  run: NewRun,
): Promise<{ created: boolean; run: RunRecord }> {
  for (;;) {
    const inserted = await query(
      db,
      `INSERT INTO ${names.runs} AS r (run_id, kind, name, signature, status, snapshot)
       VALUES ($1::text, $2::text, $3::text, $4::text, $6::text, $5::text::jsonb)
       ON CONFLICT (run_id) DO NOTHING
       RETURNING ${runColumns(names, 'r')}`,
      [
        run.runId,
        run.kind,
        run.name,
        run.signature,
        jsonParam(run.snapshot ?? undefined),
        run.status ?? 'running',
      ],
    );
    if (inserted[0] !== undefined) return { created: true, run: decodeRun(inserted[0]) };
    const existing = await query(
      db,
      `SELECT ${runColumns(names, 'r')} FROM ${names.runs} r WHERE r.run_id = $1::text`,
      [run.runId],
    );
    // Deleted between the two statements: insert again.
    if (existing[0] !== undefined) return { created: false, run: decodeRun(existing[0]) };
  }
}
