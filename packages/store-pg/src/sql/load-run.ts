import type { StoredRun } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';
import {
  decodeJournal,
  decodeSignals,
  decodeRun,
  holderGoneColumn,
  journalColumn,
  runColumnCount,
  runColumns,
  signalsColumn,
  storedItemsOf,
  withHolderGone,
} from '../row.js';
import { checkpointSeqOf } from './claimed.js';

/**
 * The run, its journal in seq order and its mailbox, read in one statement so all come from one snapshot, with the
 * snapshot version and long arrays as stored (for the store's record of them).
 */
export async function loadRun(
  db: Db,
  names: Names,
  runId: string,
): Promise<{ loaded: StoredRun; stored: ReturnType<typeof storedItemsOf> } | undefined> {
  const rows = await query(
    db,
    `SELECT ${runColumns(names, 'r')}, ${journalColumn(names, 'r')}, ${signalsColumn(names, 'r')},
            r.checkpoint_seq::float8, ${holderGoneColumn(names, 'r')}
     FROM ${names.runs} r WHERE r.run_id = $1::text`,
    [runId],
  );
  const row = rows[0];
  if (row === undefined) return undefined;
  const run = withHolderGone(decodeRun(row), row[runColumnCount + 3]);
  return {
    loaded: {
      run,
      journal: decodeJournal(row[runColumnCount], run.runId),
      signals: decodeSignals(row[runColumnCount + 1], run.runId),
      ...checkpointSeqOf(row[runColumnCount + 2]),
    },
    stored: storedItemsOf(row),
  };
}
