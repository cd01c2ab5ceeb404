import { expect, it } from 'vitest';
import type { SimulationBackend } from './backend.js';
import { describeFailure, exploreSchedules } from './explore-schedules.js';
import { simulationSeeds } from './seeds.js';

/** Options of `itKeepsInvariants`. */
export interface SimulationTestOptions {
  /** Schedules in `pnpm test`; `CAIRN_SIM_SCHEDULES` overrides it (see `simulationSeeds`). */
  schedules: number;
  /** Schedules run at once. @defaultValue 1 */
  parallel?: number;
  /** What one schedule may take at most, for the test's timeout. @defaultValue 2000 */
  msPerSchedule?: number;
  /** Seeds that once broke an invariant on this backend, run every time beside the others. */
  regressions?: readonly number[];
}

/**
 * Registers a vitest test that runs seeded schedules on `backend` and fails with every broken schedule's
 * seed and decisions: how a store package puts itself under the simulation.
 */
export function itKeepsInvariants(
  backend: SimulationBackend,
  options: SimulationTestOptions,
): void {
  const { seeds, timeoutMs } = simulationSeeds(
    options.schedules,
    options.msPerSchedule,
    options.regressions,
  );
  it(
    `keeps DESIGN.md's invariants over ${seeds.length} seeded schedules on ${backend.name}`,
    async () => {
      const report = await exploreSchedules({
        backend,
        seeds,
        parallel: options.parallel ?? 1,
      });
      expect(report.failures.map((failure) => describeFailure(failure))).toEqual([]);
      expect(report.schedules).toBe(seeds.length);
    },
    timeoutMs,
  );
}
