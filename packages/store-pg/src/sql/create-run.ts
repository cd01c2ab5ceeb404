import { RunNotFoundError, type NewRun, type RunRecord } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';
import type { WriteOutcome } from '../write-batcher.js';
import { decodeRun, runColumns } from '../row.js';

/** A run as a row of the insert's `jsonb_to_recordset`; a wait only with status `waiting` (checked by then). */
function newRow(run: NewRun, ord: number) {
  const wait = run.status === 'waiting' ? run.wait : undefined;
  return {
    run_id: run.runId,
    kind: run.kind,
    name: run.name,
    signature: run.signature,
    status: run.status ?? 'running',
    snapshot: run.snapshot == null ? null : JSON.stringify(run.snapshot),
    parent_run_id: run.parent?.runId ?? null,
    parent_incarnation: run.parent?.incarnation ?? null,
    wait_until: wait?.until ?? null,
    wait_signals: wait?.signals ?? null,
    wait_detail: wait?.detail === undefined ? null : JSON.stringify(wait.detail),
    ord,
  };
}

/**
 * Inserts runs unless one with the same id exists. A child run is inserted only under its parent at that
 * incarnation, recording its root (the parent's root, or the parent); its row goes with its parent's
 * (ON DELETE CASCADE), so a child of an earlier incarnation of the parent can never be left behind.
 */
function insertRuns(db: Db, names: Names, runs: readonly NewRun[]): Promise<unknown[][]> {
  return query(
    db,
    `INSERT INTO ${names.runs} AS r
            (run_id, kind, name, signature, status, snapshot, parent_run_id, parent_incarnation, root_run_id,
             wait_until, wait_signals, wait_detail)
     SELECT o.run_id, o.kind, o.name, o.signature, o.status, o.snapshot,
            p.run_id, p.created_seq, coalesce(p.root_run_id, p.run_id),
            o.wait_until, o.wait_signals, o.wait_detail
       FROM jsonb_to_recordset($1::text::jsonb)
            AS o(run_id text, kind text, name text, signature text, status text, snapshot text,
                 parent_run_id text, parent_incarnation text, wait_until float8, wait_signals text[],
                 wait_detail text, ord int)
       LEFT JOIN ${names.runs} p ON p.run_id = o.parent_run_id AND p.created_seq::text = o.parent_incarnation
      WHERE o.parent_run_id IS NULL OR p.run_id IS NOT NULL
      ORDER BY o.ord
     ON CONFLICT (run_id) DO NOTHING
     RETURNING ${runColumns(names, 'r')}`,
    [JSON.stringify(runs.map(newRow))],
  );
}

/**
 * Inserts a run unless one with the same id exists; returns the stored record and whether it was new. Throws
 * `RunNotFoundError` naming the parent when a child's parent does not exist at that incarnation.
 */
export async function createRun(
  db: Db,
  names: Names,
  run: NewRun,
): Promise<{ created: boolean; run: RunRecord }> {
  for (;;) {
    const inserted = await insertRuns(db, names, [run]);
    if (inserted[0] !== undefined) return { created: true, run: decodeRun(inserted[0]) };
    const existing = await query(
      db,
      `SELECT ${runColumns(names, 'r')} FROM ${names.runs} r WHERE r.run_id = $1::text`,
      [run.runId],
    );
    if (existing[0] !== undefined) return { created: false, run: decodeRun(existing[0]) };
    if (run.parent !== undefined) throw new RunNotFoundError(run.parent.runId);
    // Deleted between the two statements: insert again.
  }
}

/**
 * Inserts several runs in one statement (a client starting many runs at once); a run whose id exists,
 * repeats an earlier one of the batch, or names a missing parent goes through `createRun` for its answer.
 */
export async function createRuns(
  db: Db,
  names: Names,
  runs: readonly NewRun[],
): Promise<Array<WriteOutcome<{ created: boolean; run: RunRecord }>>> {
  const rows = await insertRuns(db, names, runs);
  const inserted = new Map(rows.map((row) => [row[0] as string, decodeRun(row)]));
  const results: Array<WriteOutcome<{ created: boolean; run: RunRecord }>> = [];
  for (const run of runs) {
    const record = inserted.get(run.runId);
    inserted.delete(run.runId);
    if (record !== undefined) {
      results.push({ value: { created: true, run: record } });
      continue;
    }
    try {
      results.push({ value: await createRun(db, names, run) });
    } catch (error) {
      results.push({ error });
    }
  }
  return results;
}
