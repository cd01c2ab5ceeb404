import { isTerminalStatus, isWaitDue, type StoredRun } from '@cairn/sdk';
import type { Schedule } from './schedule.js';

/** A run a worker would continue now: not ended, and not waiting for what has not come. */
export function goesOn(loaded: StoredRun, now: number): boolean {
  const { run } = loaded;
  if (isTerminalStatus(run.status)) return false;
  if (run.status !== 'waiting' || run.wait === null || run.cancelRequested) return true;
  return isWaitDue(run.wait, loaded.signals, now);
}

/**
 * Once every holder is gone and every lease ran out, a worker's claim must find each run that has not ended and
 * is not waiting for what has not come: one it skips is stuck for good (invariant 10). Checked through
 * `claimable`, the listing a worker claims from, on the schedule's clock.
 */
export async function checkStuck(s: Schedule): Promise<void> {
  const definitions = [
    { kind: 'agent', name: 'booker' },
    { kind: 'planner', name: 'trip' },
    { kind: 'agent', name: 'clerk' },
    { kind: 'planner', name: 'itinerary' },
  ];
  const store = s.client.inner;
  const listed = new Set(await store.claimable({ limit: 1_000, definitions, now: s.clock.now() }));
  for (const fate of s.fates.values()) {
    if (fate.discarded) continue;
    const loaded = await store.load(fate.runId);
    if (loaded === undefined || !goesOn(loaded, s.clock.now()) || listed.has(fate.runId)) continue;
    const { run } = loaded;
    s.ledger.violation(
      `${fate.runId} (${run.status}, owner ${run.owner}, wait ${JSON.stringify(run.wait)}) is not ` +
        'claimable once every lease ran out: no worker would ever continue it (invariant 10)',
    );
  }
}
