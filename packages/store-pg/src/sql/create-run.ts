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

/**
 * Inserts several runs in one statement (a client starting many runs at once); a run whose id exists, or
 * repeats an earlier one of the batch, goes through `createRun` to return the stored record.
 */
export async function createRuns(
  db: Db,
  names: Names,
  runs: readonly NewRun[],
): Promise<Array<{ created: boolean; run: RunRecord }>> {
  const rows = await query(
    db,
    `INSERT INTO ${names.runs} AS r (run_id, kind, name, signature, status, snapshot)
     SELECT o.run_id, o.kind, o.name, o.signature, o.status, o.snapshot
       FROM jsonb_to_recordset($1::text::jsonb)
            AS o(run_id text, kind text, name text, signature text, status text, snapshot jsonb, ord int)
      ORDER BY o.ord
     ON CONFLICT (run_id) DO NOTHING
     RETURNING ${runColumns(names, 'r')}`,
    [
      JSON.stringify(
        runs.map((run, ord) => ({
          run_id: run.runId,
          kind: run.kind,
          name: run.name,
          signature: run.signature,
          status: run.status ?? 'running',
          snapshot: run.snapshot ?? null,
          ord,
        })),
      ),
    ],
  );
  const inserted = new Map(rows.map((row) => [row[0] as string, decodeRun(row)]));
  const results: Array<{ created: boolean; run: RunRecord }> = [];
  for (const run of runs) {
    const record = inserted.get(run.runId);
    inserted.delete(run.runId);
    results.push(
      record !== undefined ? { created: true, run: record } : await createRun(db, names, run),
    );
  }
  return results;
}
