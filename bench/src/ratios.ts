import { medianOf, type Ratio, type Row } from './report.js';

/** Cairn against the limit and against DBOS, from the medians of one run; NaN where a row is missing. */
export function computeRatios(rows: Row[]): Ratio[] {
  const report = { rows };
  const limitSingle = medianOf(report, 'limit', 'single.median_ms');
  const limitConcurrent = medianOf(report, 'limit', 'concurrent.commits_per_s');
  const pgTrip = medianOf(report, 'per_step', 'pg.median_ms');
  const memoryTrip = medianOf(report, 'per_step', 'memory.median_ms');
  const cairnTripsPerSecond = medianOf(report, 'throughput', 'trips_per_s');
  const dbosStep = medianOf(report, 'dbos', 'sequential.step_ms');
  const dbosStepsPerSecond = medianOf(report, 'dbos', 'concurrent.steps_per_s');
  const perStepRatio = pgTrip / limitSingle;
  const vsDbos = cairnTripsPerSecond / dbosStepsPerSecond;
  return [
    {
      key: 'per_step_vs_limit',
      label: 'Cairn store-pg ms per trip / limit single-client median',
      value: perStepRatio,
      target: { text: '<= 2x', met: perStepRatio <= 2 },
    },
    {
      key: 'memory_step_vs_limit',
      label: 'Cairn memory-store ms per trip / limit single-client median',
      value: memoryTrip / limitSingle,
    },
    {
      key: 'throughput_vs_limit',
      label: 'Cairn trips/s / limit commits/s at 32 connections',
      value: cairnTripsPerSecond / limitConcurrent,
    },
    {
      key: 'sequential_vs_dbos',
      label: 'Cairn store-pg ms per trip / DBOS ms per step (sequential; < 1 is faster)',
      value: pgTrip / dbosStep,
    },
    {
      key: 'throughput_vs_dbos',
      label: 'Cairn trips/s / DBOS steps/s (concurrent)',
      value: vsDbos,
      target: { text: '>= 5x', met: vsDbos >= 5 },
    },
    {
      key: 'dbos_step_vs_limit',
      label: 'DBOS ms per step / limit single-client median',
      value: dbosStep / limitSingle,
    },
  ];
}
