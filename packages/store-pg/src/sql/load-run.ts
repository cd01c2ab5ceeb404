import type { StoredRun } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';
import {
  decodeJournal,
  decodeRun,
  journalColumn,
  runColumnCount,
  runColumns,
  storedItemsOf,
} from '../row.js';

/**
 * The run and its journal in seq order, read in one statement so both come from one snapshot, with the
 * snapshot version and long arrays as stored (for the store's record of them).
 */
export async function loadRun(
  db: Db,
  names: Names,
  runId: string,
): Promise<{ loaded: StoredRun; stored: ReturnType<typeof storedItemsOf> } | undefined> {
  const rows = await query(
    db,
    `SELECT ${runColumns(names, 'r')}, ${journalColumn(names, 'r')}
     FROM ${names.runs} r WHERE r.run_id = $1::text`,
    [runId],
  );
  const row = rows[0];
  if (row === undefined) return undefined;
  const run = decodeRun(row);
  return {
    loaded: {
      run,
      journal: decodeJournal(row[runColumnCount], run.runId),
    },
    stored: storedItemsOf(row),
  };
}
