import { createClient, createWorker } from '@cairn/worker';
import { benchAgent } from '../agents.js';
import type { BenchContext } from '../context.js';
import { callsPer, countingStore } from '../counting-store.js';
import { costBetween, readCounters, waitForBackendsToExit, type Cost } from '../pg-counters.js';
import { dropSchema, freshSchema, migrateSchema, openStore } from '../pg-setup.js';
import type { Row } from '../report.js';
import { figure, now, repeat } from '../stats.js';

interface ThroughputRep {
  tripsPerSecond: number;
  cost: Cost;
  calls: string;
  /** Stream store calls (appends and position reads), when the runs streamed. */
  streamCalls?: number;
}

/** Enqueues `runs` runs and performs them with one in-process worker; the time from first enqueue to last end. */
export async function workerThroughput(
  ctx: BenchContext,
  options: { runs: number; trips: number; concurrency: number; poolMax: number },
  streaming?: { textTokens: number; stream: boolean },
): Promise<ThroughputRep> {
  const schema = freshSchema('bench_tp');
  await migrateSchema(ctx, schema);
  try {
    await waitForBackendsToExit(ctx.admin, ctx.database);
    const before = await readCounters(ctx.admin, ctx.database);
    const opened = openStore(ctx, schema, options.poolMax);
    const { store, counts } = countingStore(opened.store);
    const agent = benchAgent({
      name: 'throughput',
      trips: options.trips,
      ...(streaming === undefined ? {} : { textTokens: streaming.textTokens }),
    });
    let completed = 0;
    const failures: string[] = [];
    let allDone: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (allDone = resolve));
    const worker = createWorker({
      store,
      agents: [agent],
      concurrency: options.concurrency,
      stream: streaming?.stream ?? false,
      shutdownSignals: [],
      onEvent: (event) => {
        if (event.type === 'completed') completed += 1;
        else if (
          event.type === 'failed' ||
          event.type === 'dead_lettered' ||
          event.type === 'suspended'
        )
          failures.push(`${event.runId}: ${event.message}`);
        else return;
        if (completed + failures.length === options.runs) allDone();
      },
    });
    await worker.start();
    const client = createClient({ store });
    const started = now();
    await Promise.all(Array.from({ length: options.runs }, () => client.start(agent, 'go')));
    await done;
    const elapsed = now() - started;
    await worker.close();
    await opened.close();
    if (failures.length > 0) throw new Error(`runs failed: ${failures.slice(0, 3).join('; ')}`);
    await waitForBackendsToExit(ctx.admin, ctx.database);
    const cost = await costBetween(ctx.admin, before, await readCounters(ctx.admin, ctx.database));
    return {
      tripsPerSecond: (options.runs * options.trips * 1000) / elapsed,
      cost,
      calls: callsPer(counts, options.runs * options.trips),
      streamCalls: (counts.calls.appendStream ?? 0) + (counts.calls.streamPosition ?? 0),
    };
  } finally {
    await dropSchema(ctx, schema);
  }
}

/** Row 3: runs of 10 trips through an in-process worker, end to end. */
export async function throughputRow(ctx: BenchContext): Promise<Row> {
  const { reps, throughput } = ctx.config;
  ctx.log(
    `throughput: ${throughput.runs} runs of ${throughput.trips} trips, worker concurrency ${throughput.concurrency} x${reps}`,
  );
  const results = await repeat(reps, () => workerThroughput(ctx, throughput));
  const trips = throughput.runs * throughput.trips;
  return {
    key: 'throughput',
    title: `3. Throughput: ${throughput.runs} runs of ${throughput.trips} trips through one in-process worker`,
    metrics: [
      {
        key: 'trips_per_s',
        label: 'trips/s end to end (enqueue to last completion)',
        unit: '/s',
        figure: figure(results.map((r) => r.tripsPerSecond)),
      },
      {
        key: 'commits_per_trip',
        label: 'commits per trip (xact_commit, reads included)',
        unit: '',
        figure: figure(results.map((r) => r.cost.commits / trips)),
      },
      {
        key: 'write_xacts_per_trip',
        label: 'writing transactions per trip (xids)',
        unit: '',
        figure: figure(results.map((r) => r.cost.writeXacts / trips)),
      },
      {
        key: 'wal_bytes_per_trip',
        label: 'WAL bytes per trip',
        unit: 'B',
        figure: figure(results.map((r) => r.cost.walBytes / trips)),
      },
    ],
    notes: [
      `one worker in the bench process: concurrency ${throughput.concurrency}, postgres pool max ${throughput.poolMax} (plus its lock and LISTEN connections); runs enqueued by a client in the same process`,
      `store calls per trip (run overhead included): ${results[0]?.calls ?? '-'}`,
    ],
  };
}
