/**
 * A Cairn worker process for the drain, takeover and memory rows. Configured by environment variables; prints
 * JSON lines, each with the wall-clock time `t`:
 * - `ready` once loaded (and, with START_ON_SIGNAL=1, waiting for SIGUSR2 to start claiming);
 * - one `event` per worker event (PRINT_EVENTS=0 for none), and per checkpoint and tool start with
 *   PRINT_BOUNDARIES=1;
 * - one `tool` per tool call run with PRINT_TOOL_RUNS=1;
 * - with PROGRESS_MS, `progress` (runs completed and failed, when the last completed) at that interval when
 *   it changed;
 * - with MEMORY_REPORT_MS, its RSS and active runs at that interval;
 * - on SIGTERM, `stats`: CPU time since it started claiming and, with COUNT_CALLS=1, its store calls, leases
 *   granted and SQL statements; then it closes.
 * Variables: DATABASE_URL, CAIRN_SCHEMA (or, with STORE=redis, REDIS_URL and CAIRN_PREFIX), OWNER, AGENT_NAME,
 * TRIPS, TOOL_WAIT_MS, WAIT_FIRST_ONLY, LEASE_MS, POLL_MS, CONCURRENCY, POOL_MAX, START_ON_SIGNAL, PRINT_EVENTS,
 * PRINT_BOUNDARIES, PRINT_TOOL_RUNS, PROGRESS_MS, COUNT_CALLS (Postgres only: its statements),
 * MEMORY_REPORT_MS.
 */
import type { DurableStore } from '@cairn/sdk';
import { pgStore } from '@cairn/store-pg';
import { redisStore } from '@cairn/store-redis';
import { createWorker } from '@cairn/worker';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { benchAgent } from '../agents.js';
import { countingSql } from '../counting-sql.js';
import { countingStore } from '../counting-store.js';

const env = (name: string, fallback?: string): string => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is required`);
  return value;
};
const flag = (name: string) => env(name, '0') === '1';
const print = (line: object) =>
  process.stdout.write(`${JSON.stringify({ ...line, t: Date.now() })}\n`);

const counting = flag('COUNT_CALLS');

/** The store the worker runs on, what counts its statements (Postgres only), and how to close both. */
function openStore(): {
  store: DurableStore & { close(): Promise<void> };
  sent?: ReturnType<typeof countingSql>;
  end(): Promise<void>;
} {
  if (env('STORE', 'pg') === 'redis') {
    const client = new Redis(env('REDIS_URL'), { maxRetriesPerRequest: 1 });
    client.on('error', () => undefined);
    return {
      store: redisStore({ client, prefix: env('CAIRN_PREFIX') }),
      end: async () => client.disconnect(),
    };
  }
  const raw = postgres(env('DATABASE_URL'), {
    max: Number(env('POOL_MAX', '10')),
    onnotice: () => undefined,
  });
  const sent = counting ? countingSql(raw) : undefined;
  return {
    store: pgStore({ sql: sent?.sql ?? raw, schema: env('CAIRN_SCHEMA') }),
    ...(sent === undefined ? {} : { sent }),
    end: () => raw.end({ timeout: 5 }),
  };
}

const opened = openStore();
const { sent } = opened;
const counted = counting ? countingStore(opened.store, { bytes: false }) : undefined;
const printEvents = env('PRINT_EVENTS', '1') === '1';
const printBoundaries = flag('PRINT_BOUNDARIES');
const printToolRuns = flag('PRINT_TOOL_RUNS');
const progress = { completed: 0, failed: 0, lastCompletedAt: 0 };

const worker = createWorker({
  store: counted?.store ?? opened.store,
  agents: [
    benchAgent({
      name: env('AGENT_NAME'),
      trips: Number(env('TRIPS', '2')),
      toolWaitMs: Number(env('TOOL_WAIT_MS', '0')),
      waitFirstOnly: flag('WAIT_FIRST_ONLY'),
      ...(printToolRuns
        ? { onToolRun: (runId: string, call: string) => print({ kind: 'tool', runId, call }) }
        : {}),
    }),
  ],
  owner: env('OWNER'),
  leaseMs: Number(env('LEASE_MS', '30000')),
  pollMs: Number(env('POLL_MS', '1000')),
  concurrency: Number(env('CONCURRENCY', '10')),
  onEvent: (event) => {
    if (event.type === 'completed') {
      progress.completed += 1;
      progress.lastCompletedAt = Date.now();
    } else if (event.type === 'failed' || event.type === 'dead_lettered') {
      progress.failed += 1;
    }
    if (printEvents)
      print({ ...event, ...('kind' in event ? { runKind: event.kind } : {}), kind: 'event' });
  },
  ...(printBoundaries
    ? {
        onBoundary: (boundary) => {
          if (boundary.point === 'checkpoint.after' || boundary.point === 'effect.before')
            print({ kind: 'boundary', ...boundary });
        },
      }
    : {}),
});

let cpuAtStart = process.cpuUsage();
/** Keeps a process waiting for SIGUSR2 alive: a signal handler alone does not. */
let waiting: NodeJS.Timeout | undefined;
const start = async () => {
  clearInterval(waiting);
  cpuAtStart = process.cpuUsage();
  await worker.start();
};
if (flag('START_ON_SIGNAL')) {
  waiting = setInterval(() => undefined, 60_000);
  process.once('SIGUSR2', () => void start());
} else {
  await start();
}
print({ kind: 'ready', owner: worker.owner });

const progressMs = Number(env('PROGRESS_MS', '0'));
if (progressMs > 0) {
  let printed = '';
  setInterval(() => {
    const text = JSON.stringify(progress);
    if (text === printed) return;
    printed = text;
    print({ kind: 'progress', ...progress });
  }, progressMs).unref();
}

const reportMs = Number(env('MEMORY_REPORT_MS', '0'));
if (reportMs > 0) {
  const gc = (globalThis as { gc?: () => void }).gc;
  setInterval(() => {
    gc?.();
    const usage = process.memoryUsage();
    print({
      kind: 'memory',
      active: worker.active().length,
      rss: usage.rss,
      heapUsed: usage.heapUsed,
      gc: gc !== undefined,
    });
  }, reportMs).unref();
}

process.once('SIGTERM', () => {
  clearInterval(waiting);
  const cpu = process.cpuUsage(cpuAtStart);
  print({
    kind: 'stats',
    cpuMs: (cpu.user + cpu.system) / 1000,
    ...(counted === undefined
      ? {}
      : { calls: counted.counts.calls, leases: counted.counts.leases }),
    ...(sent === undefined ? {} : { statements: sent.counts.statements }),
  });
  void (async () => {
    await worker.close();
    await opened.store.close();
    await opened.end();
  })();
});
