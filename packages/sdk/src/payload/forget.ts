import { LeaseHeldError } from '../errors.js';
import { checkRunId, checkSubject } from '../run-id.js';
import type { DurableStore, RunRecord } from '../store/contract.js';
import { listPages } from '../store/list-pages.js';
import type { ForgetOptions, ForgetReport, ForgetTarget } from '../store/forget-types.js';
import { storedSubject } from './sealed-snapshot.js';
import type { PayloadSealer } from './sealer.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Forgets a subject or a run: deletes the subject's keys first (every copy of its payloads is unreadable from
 * then on, and a holder still writing for it stops at its next write with `SUBJECT_FORGOTTEN`), asks its live
 * runs to stop, then deletes its runs as their holders let go. Runs of other subjects are not touched.
 */
export async function forget(
  raw: DurableStore,
  sealer: PayloadSealer,
  target: ForgetTarget,
  options: ForgetOptions = {},
): Promise<ForgetReport> {
  const subject = 'subject' in target ? checkSubject(target.subject) : undefined;
  const runId = 'runId' in target ? checkRunId(target.runId) : undefined;
  const keysDeleted = subject === undefined ? false : await sealer.forget(subject);
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const deleted: string[] = [];
  const asked = new Set<string>();
  // The runs to delete, found once: no run is made for a subject once its keys are gone (a create, a child's
  // included, needs them), so later passes only wait on the runs still held, never read the list again.
  let runs: RunRecord[] = [];
  if (runId !== undefined) {
    const stored = await raw.load(runId);
    if (stored !== undefined) runs.push(stored.run);
  } else {
    // A page at a time: the runs of every subject are read to find this one's. A child run holds its root's
    // subject and goes with it.
    for await (const page of listPages(raw))
      runs.push(
        ...page.filter((run) => run.rootRunId === null && storedSubject(run.snapshot) === subject),
      );
  }
  for (;;) {
    const remaining: string[] = [];
    for (const run of runs) {
      try {
        if (await raw.delete(run.runId)) deleted.push(run.runId);
      } catch (error) {
        if (!(error instanceof LeaseHeldError)) throw error;
        if (!asked.has(run.runId)) {
          asked.add(run.runId);
          await raw.requestCancel(run.runId);
        }
        remaining.push(run.runId);
      }
    }
    if (remaining.length === 0 || Date.now() >= deadline)
      return { deleted, remaining, keysDeleted };
    await pause(Math.min(200, Math.max(0, deadline - Date.now())));
    // A run still held is read again by id: one its holder deleted is done, one made again under its id since
    // (another incarnation: someone else's run) is left alone.
    const waited = new Map(runs.map((run) => [run.runId, run.incarnation]));
    runs = [];
    for (const id of remaining) {
      const stored = await raw.load(id);
      if (stored === undefined) deleted.push(id);
      else if (stored.run.incarnation === waited.get(id)) runs.push(stored.run);
    }
  }
}
