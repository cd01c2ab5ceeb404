import type { RunSignal } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';
import { decodeSignals, signalsColumn } from '../row.js';

/** The signals in a run's mailbox no checkpoint consumed, oldest first; empty for an unknown run. */
export async function readMailbox(db: Db, names: Names, runId: string): Promise<RunSignal[]> {
  const rows = await query(
    db,
    `SELECT ${signalsColumn(names, 'r')} FROM ${names.runs} r WHERE r.run_id = $1::text`,
    [runId],
  );
  const row = rows[0];
  return row === undefined ? [] : decodeSignals(row[0], runId);
}
