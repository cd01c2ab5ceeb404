import postgres from 'postgres';
import type { BenchContext } from '../context.js';
import type { Cost } from '../pg-counters.js';
import { dropSchema, freshSchema, migrateSchema } from '../pg-setup.js';
import { dbosVersion, startDbos, type DbosResult } from '../processes/dbos-process.js';
import type { Metric, Row } from '../report.js';
import { figure, quantile } from '../stats.js';
import { pgSequentialRuns, type StepRep } from './per-step.js';
import { workerThroughput } from './throughput.js';

interface Pair<Cairn> {
  cairn: Cairn;
  dbos: DbosResult;
}

const metric = (
  key: string,
  label: string,
  unit: string,
  values: number[],
  perPair = false,
): Metric => ({
  key,
  label,
  unit,
  figure: figure(values),
  ...(perPair ? { repsLabel: 'per pair' } : {}),
});

/**
 * Row 4: Cairn against DBOS Transact on the same server, in interleaved pairs (Cairn, then DBOS, then Cairn
 * again...), so that both sides of each ratio share the machine's noise. Each pair's two halves run the same
 * workload size: sequential runs of the per-step row's size against as many sequential workflows of as many
 * steps, and the throughput row's runs through a worker against as many workflows started at once. DBOS runs
 * in one warm child process for the whole row, with its system database on the same server.
 */
export async function dbosPairsRow(ctx: BenchContext): Promise<Row> {
  const { pairs, perStep, throughput, dbos } = ctx.config;
  const database = `${ctx.database}_dbos`;
  const url = new URL(ctx.url);
  url.pathname = `/${database}`;
  await ctx.admin.unsafe(`CREATE DATABASE "${database}"`);
  const schema = freshSchema('bench_pairs');
  await migrateSchema(ctx, schema);
  const sequential: Array<Pair<StepRep & { cost: Cost }>> = [];
  const concurrent: Array<Pair<Awaited<ReturnType<typeof workerThroughput>>>> = [];
  try {
    ctx.log(
      'dbos: launching one DBOS process for the row (it migrates its database, then warms up)',
    );
    const dbosProcess = await startDbos({
      url: url.toString(),
      steps: perStep.trips,
      poolSize: dbos.poolSize,
    });
    try {
      for (let pair = 1; pair <= pairs; pair += 1) {
        ctx.log(`dbos: pair ${pair}/${pairs}, sequential: Cairn, then DBOS`);
        const cairnSequential = await pgSequentialRuns(ctx, schema, perStep.runs, perStep.trips);
        sequential.push({
          cairn: cairnSequential,
          dbos: await dbosProcess.run('sequential', perStep.runs),
        });
        ctx.log(`dbos: pair ${pair}/${pairs}, concurrent: Cairn, then DBOS`);
        const cairnConcurrent = await workerThroughput(ctx, throughput);
        concurrent.push({
          cairn: cairnConcurrent,
          dbos: await dbosProcess.run('concurrent', throughput.runs),
        });
      }
    } finally {
      await dbosProcess.close();
    }
  } finally {
    await dropSchema(ctx, schema);
    const drop = postgres(ctx.url, { max: 1, onnotice: () => undefined });
    await drop
      .unsafe(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`)
      .finally(() => drop.end({ timeout: 5 }));
  }

  const sequentialUnits = perStep.runs * perStep.trips;
  const concurrentUnits = throughput.runs * throughput.trips;
  const dbosStepMs = (p: Pair<unknown>) => p.dbos.elapsed / sequentialUnits;
  const dbosStepsPerSecond = (p: Pair<unknown>) => (concurrentUnits * 1000) / p.dbos.elapsed;
  const seqCairnWal = (p: (typeof sequential)[number]) => p.cairn.cost.walBytes / sequentialUnits;
  const seqDbosWal = (p: Pair<unknown>) => p.dbos.walBytes / sequentialUnits;
  const conCairnWal = (p: (typeof concurrent)[number]) => p.cairn.cost.walBytes / concurrentUnits;
  const conDbosWal = (p: Pair<unknown>) => p.dbos.walBytes / concurrentUnits;
  const metrics: Metric[] = [
    metric(
      'sequential.cairn_trip_ms',
      'sequential, Cairn store-pg: ms per trip, median',
      'ms',
      sequential.map((p) => p.cairn.median),
    ),
    metric(
      'sequential.cairn_end_to_end_ms',
      'sequential, Cairn: whole run time / trips',
      'ms',
      sequential.map((p) => p.cairn.perTripEndToEnd),
    ),
    metric(
      'sequential.step_ms',
      'sequential, DBOS: ms per step (workflow time / steps)',
      'ms',
      sequential.map(dbosStepMs),
    ),
    metric(
      'sequential.step_median_ms',
      'sequential, DBOS: step latency, median',
      'ms',
      sequential.map((p) => quantile(p.dbos.stepTimes, 0.5)),
    ),
    metric(
      'sequential.ratio',
      'sequential: Cairn ms per trip / DBOS ms per step',
      'x',
      sequential.map((p) => p.cairn.median / dbosStepMs(p)),
      true,
    ),
    metric(
      'sequential.end_to_end_ratio',
      'sequential: Cairn whole run / trips, over DBOS ms per step',
      'x',
      sequential.map((p) => p.cairn.perTripEndToEnd / dbosStepMs(p)),
      true,
    ),
    metric(
      'concurrent.cairn_trips_per_s',
      `concurrent, Cairn worker (concurrency ${throughput.concurrency}): trips/s`,
      '/s',
      concurrent.map((p) => p.cairn.tripsPerSecond),
    ),
    metric(
      'concurrent.steps_per_s',
      `concurrent, DBOS (${throughput.runs} workflows at once): steps/s`,
      '/s',
      concurrent.map(dbosStepsPerSecond),
    ),
    metric(
      'concurrent.ratio',
      'concurrent: Cairn trips/s / DBOS steps/s',
      'x',
      concurrent.map((p) => p.cairn.tripsPerSecond / dbosStepsPerSecond(p)),
      true,
    ),
    metric(
      'sequential.cairn_wal_bytes_per_trip',
      'sequential, Cairn: WAL bytes per trip',
      'B',
      sequential.map(seqCairnWal),
    ),
    metric(
      'sequential.wal_bytes_per_step',
      'sequential, DBOS: WAL bytes per step',
      'B',
      sequential.map(seqDbosWal),
    ),
    metric(
      'sequential.wal_ratio',
      'sequential: Cairn WAL per trip / DBOS WAL per step',
      'x',
      sequential.map((p) => seqCairnWal(p) / seqDbosWal(p)),
      true,
    ),
    metric(
      'concurrent.cairn_wal_bytes_per_trip',
      'concurrent, Cairn: WAL bytes per trip',
      'B',
      concurrent.map(conCairnWal),
    ),
    metric(
      'concurrent.wal_bytes_per_step',
      'concurrent, DBOS: WAL bytes per step',
      'B',
      concurrent.map(conDbosWal),
    ),
    metric(
      'concurrent.wal_ratio',
      'concurrent: Cairn WAL per trip / DBOS WAL per step',
      'x',
      concurrent.map((p) => conCairnWal(p) / conDbosWal(p)),
      true,
    ),
    metric(
      'sequential.write_xacts_per_step',
      'sequential, DBOS: writing transactions per step (xids)',
      '',
      sequential.map((p) => p.dbos.writeXacts / sequentialUnits),
    ),
    metric(
      'concurrent.write_xacts_per_step',
      'concurrent, DBOS: writing transactions per step (xids)',
      '',
      concurrent.map((p) => p.dbos.writeXacts / concurrentUnits),
    ),
  ];
  return {
    key: 'dbos',
    title: `4. Cairn vs DBOS Transact ${dbosVersion()}, ${pairs} interleaved pair${pairs === 1 ? '' : 's'}: ${perStep.runs} sequential runs / workflows of ${perStep.trips} trips / steps; ${throughput.runs} at once`,
    metrics,
    notes: [
      'each pair runs Cairn, then DBOS, back to back; a ratio is taken within each pair and the figure is the median of the pair ratios (with min and max)',
      `DBOS: one warm child process for the row (launched, migrated, 5 warm-up workflows), system database "${database}" on the same server, pool ${dbos.poolSize}; trivial steps; concurrent = DBOS.startWorkflow x${throughput.runs}, then every handle's getResult()`,
      "WAL and transaction ids are server-wide (pg_current_wal_lsn() and the next xid read right before and after each half): other sessions on the server add to them, so keep the machine quiet. Cairn's include opening and closing its store",
    ],
  };
}
