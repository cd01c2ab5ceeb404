import type { DrainSetup } from './config.js';
import { medianOf, type Ratio, type Row } from './report.js';
import { codecBar } from './rows/codec.js';

/**
 * Cairn against the limit and against DBOS, from the medians of one run (against DBOS: the medians of the
 * pair ratios), and the checks that must hold whatever the machine; NaN where a row is missing.
 */
export function computeRatios(rows: Row[], drainSetups: readonly DrainSetup[]): Ratio[] {
  const report = { rows };
  const limitSingle = medianOf(report, 'limit', 'single.median_ms');
  const limitConcurrent = medianOf(report, 'limit', 'concurrent.commits_per_s');
  const pgTrip = medianOf(report, 'per_step', 'pg.median_ms');
  const memoryTrip = medianOf(report, 'per_step', 'memory.median_ms');
  const cairnTripsPerSecond = medianOf(report, 'throughput', 'trips_per_s');
  const dbosStep = medianOf(report, 'dbos', 'sequential.step_ms');
  const perStepRatio = pgTrip / limitSingle;
  const vsDbos = medianOf(report, 'dbos', 'concurrent.ratio');
  const leasesPerRun = Math.max(
    ...drainSetups.map((setup) =>
      medianOf(report, 'drain', `${setup.processes}x${setup.concurrency}.leases_per_run`),
    ),
  );
  const sequentialVsDbos = medianOf(report, 'dbos', 'sequential.ratio');
  const sequentialWal = medianOf(report, 'dbos', 'sequential.wal_ratio');
  const claimP50 = medianOf(report, 'claim_latency', 'claim.p50_ms');
  const completedShare = medianOf(report, 'mass_takeover', 'completed_share');
  const ranTwice = medianOf(report, 'mass_takeover', 'ran_twice');
  const plannerGrowth = medianOf(report, 'planner', 'largest_over_smallest');
  // A crashed holder's runs are continued at most a second after its liveness's grace (either store).
  const takeoverBar = medianOf(report, 'takeover', 'grace_ms') + 1_000;
  const takeoverPg = medianOf(report, 'takeover', 'to_checkpoint_ms');
  const takeoverRedis = medianOf(report, 'takeover', 'redis.to_checkpoint_ms');
  // The payload codec's bars (issue #34): its on / off ratios per pair, their medians.
  const codecTime = medianOf(report, 'codec', 'pg.time_ratio');
  const codecWal = medianOf(report, 'codec', 'pg.wal_ratio');
  const codecStored = medianOf(report, 'codec', 'pg.stored_ratio');
  const codecBarText = `<= ${codecBar.toFixed(2)}`;
  // Key rotation (issue #34): every run readable with the new key alone, no in-flight run failed.
  const rotationLost =
    medianOf(report, 'rotation', 'unreadable_after') +
    medianOf(report, 'rotation', 'in_flight_failures') +
    medianOf(report, 'rotation', 'pass_unreadable');
  return [
    {
      key: 'per_step_vs_limit',
      label: 'Cairn store-pg ms per trip / limit single-client median',
      value: perStepRatio,
      // store-pg issue 14's bar; the two-commit floor (2x) is the goal beyond it.
      target: { text: '<= 3x (goal 2x)', met: perStepRatio <= 3 },
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
      label: 'Cairn ms per trip / DBOS ms per step (sequential, median of pairs)',
      value: sequentialVsDbos,
      target: { text: '< 1', met: sequentialVsDbos < 1 },
    },
    {
      key: 'throughput_vs_dbos',
      label: 'Cairn trips/s / DBOS steps/s (concurrent, median of pairs)',
      value: vsDbos,
      target: { text: '>= 3x (goal 5x)', met: vsDbos >= 3 },
    },
    {
      key: 'sequential_wal_vs_dbos',
      label: 'Cairn WAL per trip / DBOS WAL per step (sequential, median of pairs)',
      value: sequentialWal,
      target: { text: '<= 2x', met: sequentialWal <= 2 },
    },
    {
      key: 'concurrent_wal_vs_dbos',
      label: 'Cairn WAL per trip / DBOS WAL per step (concurrent, median of pairs)',
      value: medianOf(report, 'dbos', 'concurrent.wal_ratio'),
    },
    {
      key: 'dbos_step_vs_limit',
      label: 'DBOS ms per step / limit single-client median',
      value: dbosStep / limitSingle,
    },
    {
      key: 'claim_p50',
      label: 'claim latency at concurrency 250: p50 (ms)',
      value: claimP50,
      target: { text: '<= 20', met: claimP50 <= 20 },
    },
    {
      key: 'drain_leases_per_run',
      label: 'drain: leases granted per run (the highest of the setups)',
      value: leasesPerRun,
      target: { text: '<= 1.05', met: leasesPerRun <= 1.05 },
    },
    {
      key: 'takeover_pg_ms',
      label: 'takeover on Postgres: SIGKILL to the first checkpoint (ms)',
      value: takeoverPg,
      target: { text: '<= grace + 1 s', met: takeoverPg <= takeoverBar },
    },
    {
      key: 'takeover_redis_ms',
      label: 'takeover on Redis: SIGKILL to the first checkpoint (ms)',
      value: takeoverRedis,
      target: { text: '<= grace + 1 s', met: takeoverRedis <= takeoverBar },
    },
    {
      key: 'mass_takeover_completed',
      label: 'mass takeover: runs completed / runs',
      value: completedShare,
      target: { text: '= 1', met: completedShare === 1 },
    },
    {
      key: 'mass_takeover_ran_twice',
      label: 'mass takeover: non-idempotent tool calls run twice',
      value: ranTwice,
      target: { text: '= 0', met: ranTwice === 0 },
    },
    {
      key: 'planner_per_node_growth',
      label: 'planner: ms per node, largest plan / smallest (10,000 / 100 nodes in a full run)',
      value: plannerGrowth,
      target: { text: '<= 2x', met: plannerGrowth <= 2 },
    },
    {
      key: 'codec_time',
      label: 'codec: store-pg ms per trip, on / off (median of pairs)',
      value: codecTime,
      target: { text: codecBarText, met: codecTime <= codecBar },
    },
    {
      key: 'codec_wal',
      label: 'codec: store-pg WAL bytes per trip, on / off (median of pairs)',
      value: codecWal,
      target: { text: codecBarText, met: codecWal <= codecBar },
    },
    {
      key: 'codec_stored',
      label: 'codec: store-pg row bytes per trip, on / off (median of pairs)',
      value: codecStored,
      target: { text: codecBarText, met: codecStored <= codecBar },
    },
    {
      key: 'rotation_lost',
      label: 'key rotation: runs unreadable or failed (unreadable after k1 retired + in flight failed)',
      value: rotationLost,
      target: { text: '0', met: rotationLost === 0 },
    },
  ];
}
