import { isTerminalStatus, LeaseLostError, type Fence, type RunStatus } from '@cairn/sdk';
import type { Names } from './names.js';
import { finalStatusList } from './row.js';

/**
 * How every fenced statement checks its writes, in one place. A statement takes its writes as rows `ops`
 * (each with an `ord`, `run_id`, `incarnation`, `epoch`, `root_run_id` and `root_incarnation`), locks the
 * runs rows they touch and their roots' in run id order (so two statements never deadlock), and decides per
 * write whether its fence holds: the run at that incarnation and epoch, and for a child its root at the same
 * epoch, since the root's lease is what holds it.
 */

/** The fence columns of an `ops` row, for `jsonb_to_recordset`. */
export const fenceColumns =
  'ord int, run_id text, incarnation text, epoch bigint, root_run_id text, root_incarnation text';

/** The fence part of one write, as an `ops` row. */
export function fenceRow(ord: number, fence: Fence) {
  return {
    ord,
    run_id: fence.runId,
    incarnation: fence.incarnation,
    epoch: fence.epoch,
    root_run_id: fence.root?.runId ?? null,
    root_incarnation: fence.root?.incarnation ?? null,
  };
}

/**
 * A CTE `locked`: the rows of the writes' runs and roots, locked in run id order, with what fences need.
 * Without `wait`, a row another transaction holds is skipped (its write is reported busy and sent again on
 * its own), so one run's locked row never holds up a batch of others.
 */
export function lockedRuns(names: Names, wait: boolean): string {
  return `locked AS (
       SELECT r.run_id, r.created_seq, r.epoch, r.status, r.checkpoint_seq, r.journal_seq, r.snapshot_version,
              r.signals_consumed, octet_length(r.journal) AS journal_bytes
         FROM ${names.runs} r
        WHERE r.run_id IN (SELECT o.run_id FROM ops o
                           UNION SELECT o.root_run_id FROM ops o WHERE o.root_run_id IS NOT NULL)
        ORDER BY r.run_id FOR UPDATE OF r${wait ? '' : ' SKIP LOCKED'}
     )`;
}

/** A CTE `checked`: each write with its run's locked row and whether its fence holds. */
export function checkedWrites(): string {
  return `checked AS (
       SELECT o.ord, t.run_id, t.status, t.checkpoint_seq, t.journal_seq, t.snapshot_version, t.journal_bytes,
              (t.created_seq::text = o.incarnation AND t.epoch = o.epoch
               AND (o.root_run_id IS NULL
                    OR EXISTS (SELECT 1 FROM locked h
                                WHERE h.run_id = o.root_run_id AND h.created_seq::text = o.root_incarnation
                                  AND h.epoch = o.epoch))) AS fenced
         FROM ops o JOIN locked t ON t.run_id = o.run_id
     )`;
}

/**
 * What a fenced statement found for one write: its run, whether the fence held, the run's state, and whether
 * its row (or its root's) was skipped because another transaction held it.
 */
export interface FenceCheck {
  found: boolean;
  fenced: boolean;
  status: RunStatus | null;
  checkpointSeq: number | null;
  busy: boolean;
}

/** Reads a `FenceCheck` from five columns of a result row, starting at `from`. */
export function fenceCheckOf(row: readonly unknown[], from: number): FenceCheck {
  return {
    found: row[from] === true,
    fenced: row[from + 1] === true,
    status: (row[from + 2] as RunStatus | null) ?? null,
    checkpointSeq: (row[from + 3] as number | null) ?? null,
    busy: row[from + 4] === true,
  };
}

/** The five columns `fenceCheckOf` reads, from `checked c` of `ops o`. */
export function fenceCheckColumns(names: Names): string {
  const exists = (id: string) => `EXISTS (SELECT 1 FROM ${names.runs} x WHERE x.run_id = ${id})`;
  // Whether a row was skipped is looked up only for a write that did not apply.
  return `c.run_id IS NOT NULL, coalesce(c.fenced, false), c.status, c.checkpoint_seq::float8,
          CASE WHEN c.run_id IS NOT NULL AND c.fenced AND o.root_run_id IS NULL THEN false
               ELSE (c.run_id IS NULL AND ${exists('o.run_id')})
                    OR (o.root_run_id IS NOT NULL AND ${exists('o.root_run_id')}
                        AND NOT EXISTS (SELECT 1 FROM locked h WHERE h.run_id = o.root_run_id)) END`;
}

/**
 * Why a write was not applied: refused by its fence, `busy` (its row was skipped: send it again on its own),
 * `unchanged` for a write of the final status its run already has (a retried write, which succeeds and
 * changes nothing), or undefined when nothing refuses it.
 */
export function refusalOf(
  fence: Fence,
  check: FenceCheck,
  write: { status?: RunStatus; journalSeq?: number },
): LeaseLostError | 'unchanged' | 'busy' | undefined {
  const { runId, epoch } = fence;
  if (check.busy) return 'busy';
  if (!check.found) return new LeaseLostError(runId, epoch, 'the run no longer exists');
  if (!check.fenced) {
    return new LeaseLostError(
      runId,
      epoch,
      fence.root === undefined
        ? 'another holder claimed it, or the run was created again'
        : `another holder claimed it or its root run "${fence.root.runId}"`,
    );
  }
  if (check.status !== null && isTerminalStatus(check.status)) {
    return write.status === check.status
      ? 'unchanged'
      : new LeaseLostError(runId, epoch, `the run already ended ${check.status}`);
  }
  if (
    write.journalSeq !== undefined &&
    check.checkpointSeq !== null &&
    check.checkpointSeq > write.journalSeq
  ) {
    return new LeaseLostError(runId, epoch, 'a newer checkpoint is stored');
  }
  return undefined;
}

/** SQL true when the write checked as `c` may apply: fenced, and its run not in a final status. */
export const mayApply = `c.fenced AND c.status NOT IN ${finalStatusList}`;
