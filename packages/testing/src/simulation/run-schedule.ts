import { createFakeClock } from '../fake-clock.js';
import { actions, pickWeighted } from './actions.js';
import type { SimulationBackend } from './backend.js';
import { checkDecisions } from './decision-invariants.js';
import { checkRuns, type RunFate } from './invariants.js';
import { seededRandom } from './random.js';
import { Schedule, startTime } from './schedule.js';
import { signalActions } from './signal-actions.js';
import type { SimKind } from './sim-world.js';
import { checkStuck, goesOn } from './stuck-runs.js';

/** Options of one schedule. */
export interface ScheduleOptions {
  /** Decisions before the schedule stops disturbing and lets every run finish. @defaultValue 60 */
  steps?: number;
  /** The lease length the processes claim with (on the schedule's clock). @defaultValue 30000 */
  leaseMs?: number;
}

/** What one schedule did and what it broke. */
export interface ScheduleResult {
  seed: number;
  backend: string;
  violations: string[];
  /** Every decision and outcome, in order: what to read when a seed fails. */
  log: string[];
}

/** Stops disturbing, lets what is in flight end, and finishes every run that has not ended. */
async function drain(s: Schedule): Promise<void> {
  s.note('-- drain: no more faults');
  for (const process of s.processes) {
    if (process.state === 'frozen') process.thaw();
    process.failingWrites = 0;
  }
  const live = () => s.processes.some((p) => !p.dead && p.attempts.size > 0);
  for (let round = 0; round < 300 && live(); round += 1) {
    const held = s.releasable(false);
    for (const item of held) item.release();
    await s.scheduler.quiet();
    if (held.length === 0) await s.advance(Math.floor(s.leaseMs / 3));
  }
  if (live()) s.ledger.violation('runs still running after the drain: a holder never let go');
  await s.expire();
  await checkStuck(s);
  const finisher = await s.spawn('finisher', 0);
  // A run that waits goes on once its time comes, which finishing the others may bring: a few passes.
  const goingOn = async (runId: string) => {
    const loaded = await s.client.inner.load(runId);
    return loaded !== undefined && goesOn(loaded, s.clock.now());
  };
  for (let pass = 0; pass < 4; pass += 1) {
    for (const fate of s.fates.values()) {
      if (fate.discarded) continue;
      for (let tries = 0; tries < 4 && (await goingOn(fate.runId)); tries += 1) {
        const attempt = s.attempt(finisher, fate.runId);
        for (let round = 0; round < 400 && finisher.attempts.has(fate.runId); round += 1) {
          const held = s.scheduler.pending((h) => h.process === 'finisher');
          for (const item of held) item.release();
          await s.scheduler.quiet();
          if (held.length === 0) await s.advance(Math.floor(s.leaseMs / 3));
        }
        await attempt;
        if (finisher.attempts.has(fate.runId)) break;
        if (tries > 0) await s.expire();
      }
    }
    const left = [...s.fates.values()].filter((fate) => !fate.discarded);
    if (!(await Promise.all(left.map((fate) => goingOn(fate.runId)))).some(Boolean)) break;
  }
  // Invariant 5: resuming a completed run performs nothing.
  for (const fate of s.fates.values()) {
    if (fate.discarded || (await s.client.inner.load(fate.runId))?.run.status !== 'completed')
      continue;
    let effects = 0;
    await s.attempt(finisher, fate.runId, () => (effects += 1));
    if (effects > 0)
      s.ledger.violation(`resuming completed ${fate.runId} passed ${effects} boundaries`);
  }
}

/** The kinds a schedule starts its runs as, each as likely as its share of this list. */
const kinds: readonly SimKind[] = [
  'booker',
  'booker',
  'trip',
  'trip',
  'clerk',
  'clerk',
  'clerk',
  'itinerary',
  'itinerary',
  'itinerary',
];

/** Runs one schedule of `seed` on `backend` and checks DESIGN.md's invariants from outside. */
export async function runSchedule(
  backend: SimulationBackend,
  seed: number,
  options: ScheduleOptions = {},
): Promise<ScheduleResult> {
  const clock = createFakeClock({ now: startTime });
  const space = await backend.open(clock);
  const random = seededRandom(seed);
  const s = new Schedule(
    seed,
    random,
    seededRandom(seed ^ 0x5bd1e995),
    clock,
    space,
    options.leaseMs ?? 30_000,
  );
  try {
    s.client = await s.spawn('client', 0);
    const runs = 2 + random.int(3);
    for (let i = 1; i <= runs; i += 1) {
      const fate: RunFate = {
        runId: `r${i}`,
        kind: random.pick(kinds),
        disrupted: false,
        cancelRequested: false,
        discarded: false,
      };
      s.fates.set(fate.runId, fate);
      s.world.choosePoison(fate.runId);
      await s.createRun(fate.runId, fate.kind);
    }
    await s.spawn();
    await s.spawn();
    for (let step = 0; step < (options.steps ?? 60); step += 1) {
      const action = pickWeighted(random, [...actions(s), ...signalActions(s)]);
      await action.run();
      await s.scheduler.quiet();
    }
    await drain(s);
    const fates = [...s.fates.values()];
    const problems = [
      ...(await checkRuns(fates, s.client.inner, s.world, s.ledger, clock.now())),
      ...(await checkDecisions(fates, s.client.inner, s.world, s.mailboxes)),
    ];
    const storeProblems = (await space.check?.()) ?? [];
    return {
      seed,
      backend: backend.name,
      violations: [...s.ledger.violations, ...problems, ...storeProblems],
      log: s.log,
    };
  } finally {
    for (const process of s.processes) process.kill();
    await space.close().catch(() => undefined);
  }
}
