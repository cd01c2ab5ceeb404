/**
 * What claims read of waiting runs, shared by `claimRuns` (which locks what it reads) and `claimableRuns` (a
 * hint, read without locks). A waiting run is due when a client asked to cancel it, a signal its wait names is
 * in its mailbox (`woken`), or its time came on the claimer's clock (`ClaimableOptions.now`).
 */

/** SQL for the claimer's clock in milliseconds: the parameter `param`, or else the database's clock. */
export function wakeClock(param: string): string {
  return `coalesce(${param}::float8, extract(epoch FROM now()) * 1000)`;
}

/**
 * SQL true when the run `r` may be claimed now as far as its status goes: queued, running or suspended, or
 * waiting and due at `now` (an expression of `wakeClock`).
 */
export function awake(now: string): string {
  return `(r.status IN ('queued', 'running', 'suspended')
           OR (r.status = 'waiting' AND (r.woken OR r.cancel_requested OR r.wait_until <= ${now})))`;
}

/**
 * Two selects of waiting root runs nobody holds that are due, each `(run_id, created_seq, owner)` of the runs
 * table `r` matching `filter`, oldest first, at most `limit`, each read by its own partial index: those whose
 * time came (`runs_wait_until_idx`: the due ones, never those that wait for later) and those a signal woke or
 * a cancel request reached (`runs_woken_idx`). `lock` ends each (`FOR UPDATE SKIP LOCKED` or nothing).
 */
export function dueWaitingRuns(
  names: { runs: string },
  { filter, now, limit, lock }: { filter: string; now: string; limit: string; lock: string },
): [byTime: string, woken: string] {
  const select = (due: string) =>
    `SELECT r.run_id, r.created_seq, r.owner FROM ${names.runs} r
      WHERE r.status = 'waiting' AND r.parent_run_id IS NULL AND ${due}
        AND r.owner IS NULL AND ${filter}
      ORDER BY r.created_seq LIMIT ${limit} ${lock}`;
  return [select(`r.wait_until <= ${now}`), select('(r.woken OR r.cancel_requested)')];
}
