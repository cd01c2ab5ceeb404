import { memoryStore, type Agent, type DurableStore } from '@cairn/sdk';
import { benchAgent } from '../agents.js';
import type { BenchContext } from '../context.js';
import { callsPer, countingStore } from '../counting-store.js';
import { costBetween, readCounters, waitForBackendsToExit, type Cost } from '../pg-counters.js';
import { dropSchema, freshSchema, migrateSchema, openStore } from '../pg-setup.js';
import type { Metric, Row } from '../report.js';
import { figure, now, quantile, repeat } from '../stats.js';

/** One repetition of sequential runs. */
export interface StepRep extends TripTimes {
  cost?: Cost;
  calls: string;
}

/** What `timeSequentialRuns` measured. */
export interface TripTimes {
  median: number;
  p99: number;
  /** Whole run time (create, claim, trips, final answer, release) over the trips. */
  perTripEndToEnd: number;
}

/**
 * Times `runs` sequential runs of `agent`, each of `trips` trips. A trip is timed from one checkpoint written
 * to the next: the model call, the tool's started mark, the tool, its settled mark and the checkpoint.
 */
export async function timeSequentialRuns(
  agent: Pick<Agent, 'execute'>,
  runs: number,
  trips: number,
): Promise<TripTimes> {
  const tripTimes: number[] = [];
  let total = 0;
  for (let run = 0; run < runs; run += 1) {
    const checkpoints: number[] = [];
    const started = now();
    await agent.execute('go', {
      onBoundary: (boundary) => {
        if (boundary.point === 'checkpoint.after' && boundary.status === 'running')
          checkpoints.push(now());
      },
    });
    total += now() - started;
    for (let i = 1; i < checkpoints.length; i += 1)
      tripTimes.push(checkpoints[i]! - checkpoints[i - 1]!);
  }
  return {
    median: quantile(tripTimes, 0.5),
    p99: quantile(tripTimes, 0.99),
    perTripEndToEnd: total / (runs * trips),
  };
}

/** `runs` sequential runs of `trips` trips of the bench agent on `store`, with the store calls per trip. */
async function sequentialRuns(
  store: DurableStore,
  runs: number,
  trips: number,
): Promise<Omit<StepRep, 'cost'>> {
  const { store: counted, counts } = countingStore(store);
  const agent = benchAgent({ name: 'per-step', trips, store: counted });
  const times = await timeSequentialRuns(agent, runs, trips);
  return { ...times, calls: callsPer(counts, runs * trips) };
}

/**
 * `runs` sequential runs of `trips` trips on store-pg in `schema` (after two warm-up runs), with what they
 * cost the server.
 */
export async function pgSequentialRuns(
  ctx: BenchContext,
  schema: string,
  runs: number,
  trips: number,
): Promise<StepRep & { cost: Cost }> {
  const warm = openStore(ctx, schema, 10);
  await sequentialRuns(warm.store, 2, trips);
  await warm.close();
  await waitForBackendsToExit(ctx.admin, ctx.database);
  const before = await readCounters(ctx.admin, ctx.database);
  const { store, close } = openStore(ctx, schema, 10);
  const rep = await sequentialRuns(store, runs, trips);
  await close();
  await waitForBackendsToExit(ctx.admin, ctx.database);
  const cost = await costBetween(ctx.admin, before, await readCounters(ctx.admin, ctx.database));
  return { ...rep, cost };
}

/** Row 2: per-trip cost of a sequential agent run on store-pg and on the memory store. */
export async function perStepRow(ctx: BenchContext): Promise<Row> {
  const { reps, perStep } = ctx.config;
  const schema = freshSchema('bench_step');
  await migrateSchema(ctx, schema);
  try {
    ctx.log(
      `per-step: ${perStep.runs} sequential runs of ${perStep.trips} trips on store-pg x${reps}`,
    );
    const pg = await repeat(reps, () => pgSequentialRuns(ctx, schema, perStep.runs, perStep.trips));
    ctx.log(`per-step: the same on the memory store x${reps}`);
    const memory = await repeat(reps, async () => {
      await sequentialRuns(memoryStore(), 2, perStep.trips);
      return sequentialRuns(memoryStore(), perStep.runs, perStep.trips);
    });
    const trips = perStep.runs * perStep.trips;
    const metrics: Metric[] = [
      {
        key: 'pg.median_ms',
        label: 'store-pg: ms per trip, median',
        unit: 'ms',
        figure: figure(pg.map((r) => r.median)),
      },
      {
        key: 'pg.p99_ms',
        label: 'store-pg: ms per trip, p99',
        unit: 'ms',
        figure: figure(pg.map((r) => r.p99)),
      },
      {
        key: 'pg.end_to_end_ms',
        label: 'store-pg: whole run time / trips (claim, answer, release in)',
        unit: 'ms',
        figure: figure(pg.map((r) => r.perTripEndToEnd)),
      },
      {
        key: 'pg.commits_per_trip',
        label: 'store-pg: commits per trip (xact_commit, reads included)',
        unit: '',
        figure: figure(pg.map((r) => r.cost.commits / trips)),
      },
      {
        key: 'pg.write_xacts_per_trip',
        label: 'store-pg: writing transactions per trip (xids)',
        unit: '',
        figure: figure(pg.map((r) => r.cost.writeXacts / trips)),
      },
      {
        key: 'pg.wal_bytes_per_trip',
        label: 'store-pg: WAL bytes per trip',
        unit: 'B',
        figure: figure(pg.map((r) => r.cost.walBytes / trips)),
      },
      {
        key: 'memory.median_ms',
        label: 'memory store: ms per trip, median',
        unit: 'ms',
        figure: figure(memory.map((r) => r.median)),
      },
      {
        key: 'memory.p99_ms',
        label: 'memory store: ms per trip, p99',
        unit: 'ms',
        figure: figure(memory.map((r) => r.p99)),
      },
    ];
    return {
      key: 'per_step',
      title: `2. Per-step overhead: sequential agent runs of ${perStep.trips} trips (model answers at once, one no-op tool per trip)`,
      metrics,
      notes: [
        `${perStep.runs} runs per repetition; a trip is timed from one checkpoint to the next`,
        `store calls per trip (store-pg, run overhead included): ${pg[0]?.calls ?? '-'}`,
      ],
    };
  } finally {
    await dropSchema(ctx, schema);
  }
}
