import { cpus, loadavg, totalmem } from 'node:os';
import { createTestDatabase } from '@cairn/testing';
import postgres from 'postgres';
import type { BenchConfig } from './config.js';
import type { BenchContext } from './context.js';
import { describeLoad, readLoad } from './load.js';
import { computeRatios } from './ratios.js';
import type { BenchReport, Row } from './report.js';
import { claimLatencyRow } from './rows/claim-latency.js';
import { codecRow } from './rows/codec.js';
import { dbosPairsRow } from './rows/dbos-pairs.js';
import { drainRow } from './rows/drain.js';
import { growthRow } from './rows/growth.js';
import { limitRow } from './rows/limit.js';
import { massTakeoverRow } from './rows/mass-takeover.js';
import { memoryRow } from './rows/memory.js';
import { perStepRow } from './rows/per-step.js';
import { plannerRow } from './rows/planner.js';
import { redisClaimPollRow } from './rows/redis-claim-poll.js';
import { rotationRow } from './rows/rotation.js';
import { takeoverRow } from './rows/takeover.js';
import { streamingRow } from './rows/streaming.js';
import { throughputRow } from './rows/throughput.js';

/** Every row, in the order they are printed. */
export const rowBuilders: ReadonlyArray<{
  key: string;
  title: string;
  build(ctx: BenchContext): Promise<Row>;
}> = [
  { key: 'limit', title: '1. The limit', build: limitRow },
  { key: 'per_step', title: '2. Per-step overhead', build: perStepRow },
  { key: 'throughput', title: '3. Throughput', build: throughputRow },
  { key: 'dbos', title: '4. Cairn vs DBOS', build: dbosPairsRow },
  { key: 'claim_latency', title: '5. Claim latency', build: claimLatencyRow },
  { key: 'drain', title: '6. Drain', build: drainRow },
  { key: 'takeover', title: '7. Takeover', build: takeoverRow },
  { key: 'mass_takeover', title: '8. Mass takeover', build: massTakeoverRow },
  { key: 'growth', title: '9. Growth', build: growthRow },
  { key: 'memory', title: '10. Memory', build: memoryRow },
  { key: 'planner', title: '11. Planner', build: plannerRow },
  { key: 'redis_claim_poll', title: '12. Redis claim poll', build: redisClaimPollRow },
  { key: 'streaming', title: '13. Streaming', build: streamingRow },
  { key: 'codec', title: '14. Payload codec', build: codecRow },
  { key: 'rotation', title: '15. Key rotation', build: rotationRow },
];

/** Options of `runBench`. */
export interface RunBenchOptions {
  config: BenchConfig;
  /** Only these rows (by key). @defaultValue all */
  only?: readonly string[];
  log?(message: string): void;
}

/**
 * Runs the bench against a database of its own (on `DATABASE_URL`'s server, else the local one, else an
 * embedded Postgres), dropped at the end. A row that fails is reported with its error, not thrown.
 */
export async function runBench(options: RunBenchOptions): Promise<BenchReport> {
  const log = options.log ?? ((message: string) => process.stderr.write(`${message}\n`));
  const database = await createTestDatabase({ prefix: 'cairn_bench' });
  const admin = postgres(database.url, { max: 1, onnotice: () => undefined });
  const ctx: BenchContext = {
    config: options.config,
    url: database.url,
    database: database.database,
    admin,
    log,
  };
  const loadAtStart = loadavg()[0]!.toFixed(1);
  try {
    const [server] = await admin.unsafe<Array<{ version: string; fsync: string; sync: string }>>(
      "SELECT current_setting('server_version') AS version, current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sync",
    );
    const rows: Row[] = [];
    for (const builder of rowBuilders) {
      if (options.only !== undefined && !options.only.includes(builder.key)) continue;
      const before = readLoad();
      const started = performance.now();
      let row: Row;
      try {
        row = await builder.build(ctx);
      } catch (error) {
        log(
          `${builder.key} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
        );
        row = {
          key: builder.key,
          title: builder.title,
          metrics: [],
          notes: [],
          error: error instanceof Error ? error.message : String(error),
        };
      }
      row.load = { before, after: readLoad(), seconds: (performance.now() - started) / 1000 };
      for (const line of describeLoad(row.load)) log(`${builder.key}: ${line}`);
      rows.push(row);
    }
    return {
      startedAt: new Date().toISOString(),
      quick: options.config.quick,
      environment: {
        node: process.version,
        cpus: cpus().length,
        memoryGiB: Math.round(totalmem() / 2 ** 30),
        postgres: server!.version,
        postgresSource: database.source,
        fsync: server!.fsync,
        synchronous_commit: server!.sync,
        repetitions: options.config.reps,
        dbosPairs: options.config.pairs,
        // Other processes on the machine share its cores and its Postgres: figures move with the load.
        load1mAtStart: loadAtStart,
        load1mAtEnd: loadavg()[0]!.toFixed(1),
      },
      rows,
      ratios: computeRatios(rows, options.config.drain.setups),
    };
  } finally {
    await admin.end({ timeout: 5 });
    await database.drop();
  }
}
