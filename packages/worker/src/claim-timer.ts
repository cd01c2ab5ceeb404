import type { ClaimableOptions, DurableStore } from '@cairn/sdk';

/**
 * The earliest time after `after` (a pass's start) a waiting run of these definitions wakes by its time, or null:
 * none waits for a time, or the store could not say (the poll still finds the run then, only later). Runs due
 * already are left out: the pass found them, and one it left alone (parked) must not hide the next sleeper.
 */
export async function readNextWake(
  store: DurableStore,
  definitions: ClaimableOptions['definitions'],
  after: number,
): Promise<number | null> {
  try {
    return await store.nextWake(definitions, after);
  } catch {
    return null;
  }
}

/**
 * How long the claim loop sleeps after a pass that began at `passStart`: the poll interval, cut short when a
 * waiting run's time comes sooner, so a sleeping run wakes on time without polling faster.
 *
 * A wake-up already due when the pass began belongs to a run the pass left alone (parked, or performed here):
 * polling for it at once would spin, so the poll interval stands. One that fell due during the pass is
 * claimed by another pass at once.
 */
export function delayBeforeNextPass(
  pollMs: number,
  nextWake: number | null,
  passStart: number,
  now: number,
): number {
  if (nextWake === null || nextWake <= passStart) return pollMs;
  return Math.max(0, Math.min(pollMs, nextWake - now));
}
