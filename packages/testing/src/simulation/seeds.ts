/**
 * Which seeds a simulation test runs: `count` from seed 1 in `pnpm test`; `CAIRN_SIM_SCHEDULES` schedules
 * from `CAIRN_SIM_FIRST_SEED` in the long mode (`pnpm simulate`); `CAIRN_SIM_SEED` alone to replay one.
 * `regressions` (seeds that once broke an invariant) run too, except when one seed is replayed.
 */
export function simulationSeeds(
  count: number,
  msPerSchedule = 2_000,
  regressions: readonly number[] = [],
): { seeds: number[]; timeoutMs: number } {
  const env = globalThis.process.env;
  if (env.CAIRN_SIM_SEED !== undefined) {
    return { seeds: [Number(env.CAIRN_SIM_SEED)], timeoutMs: 600_000 };
  }
  const total = Number(env.CAIRN_SIM_SCHEDULES ?? count);
  const first = Number(env.CAIRN_SIM_FIRST_SEED ?? 1);
  const seeds = Array.from({ length: total }, (_, i) => first + i);
  for (const seed of regressions) if (!seeds.includes(seed)) seeds.push(seed);
  return { seeds, timeoutMs: Math.max(120_000, seeds.length * msPerSchedule) };
}
