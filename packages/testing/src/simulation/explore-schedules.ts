import type { SimulationBackend } from './backend.js';
import { runSchedule, type ScheduleOptions, type ScheduleResult } from './run-schedule.js';

/** Options of `exploreSchedules`. */
export interface ExploreOptions extends ScheduleOptions {
  backend: SimulationBackend;
  /** The seeds to run, one schedule each. */
  seeds: readonly number[];
  /** Schedules run at once (each in its own space). @defaultValue 1 */
  parallel?: number;
  /** Called after each schedule, as it ends. */
  onSchedule?(result: ScheduleResult): void;
}

/** What an exploration found. */
export interface ExplorationReport {
  backend: string;
  schedules: number;
  /** The schedules that broke an invariant: replay one with its seed. */
  failures: ScheduleResult[];
}

/**
 * Runs a seeded schedule per seed (see `runSchedule`): many agents and planners on several processes of
 * one store, with effects settling in the order the seed picks, writes held on their way, crashes at
 * boundaries, hand-overs while effects run, holders frozen past their lease, lost lock sessions, cancels,
 * discards and restarts of the same run id, claims racing child adoption, and tool results no JSONB can
 * hold; runs that hold calls for approval, sent signals of every kind at any point (decisions with right and
 * wrong hashes through the client and raw, steers, follow-ups, other names, repeats, several racing), approval
 * timeouts on the fake clock, and store outages across a wake-up. A failure's seed replays the same decisions.
 */
export async function exploreSchedules(options: ExploreOptions): Promise<ExplorationReport> {
  const failures: ScheduleResult[] = [];
  const queue = [...options.seeds];
  let schedules = 0;
  const worker = async () => {
    for (let seed = queue.shift(); seed !== undefined; seed = queue.shift()) {
      const result = await runSchedule(options.backend, seed, options);
      schedules += 1;
      if (result.violations.length > 0) failures.push(result);
      options.onSchedule?.(result);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.parallel ?? 1) }, worker));
  failures.sort((a, b) => a.seed - b.seed);
  return { backend: options.backend.name, schedules, failures };
}

/** A failure as a user reads it: the seed to replay, what broke, and the decisions that led there. */
export function describeFailure(result: ScheduleResult, logLines = 80): string {
  return [
    `seed ${result.seed} on ${result.backend} broke ${result.violations.length} invariant(s):`,
    ...result.violations.map((violation) => `  - ${violation}`),
    `replay: CAIRN_SIM_SEED=${result.seed}; the schedule's last ${logLines} decisions:`,
    ...result.log.slice(-logLines).map((line) => `  ${line}`),
  ].join('\n');
}
