/**
 * A Cairn worker process for the takeover and memory rows. Configured by environment variables; prints one
 * JSON line per worker event (and per checkpoint and tool start when PRINT_BOUNDARIES=1), each with the
 * wall-clock time `t`; with MEMORY_REPORT_MS it prints its RSS and active runs at that interval.
 *   DATABASE_URL, CAIRN_SCHEMA, OWNER, AGENT_NAME, TRIPS, TOOL_WAIT_MS, WAIT_FIRST_ONLY, LEASE_MS, POLL_MS,
 *   CONCURRENCY, POOL_MAX, PRINT_BOUNDARIES, MEMORY_REPORT_MS
 */
import { pgStore } from '@cairn/store-pg';
import { createWorker } from '@cairn/worker';
import postgres from 'postgres';
import { benchAgent } from '../agents.js';

const env = (name: string, fallback?: string): string => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is required`);
  return value;
};
const sql = postgres(env('DATABASE_URL'), {
  max: Number(env('POOL_MAX', '10')),
  onnotice: () => undefined,
});
const store = pgStore({ sql, schema: env('CAIRN_SCHEMA') });
const print = (line: object) =>
  process.stdout.write(`${JSON.stringify({ ...line, t: Date.now() })}\n`);
const printBoundaries = env('PRINT_BOUNDARIES', '0') === '1';

const worker = createWorker({
  store,
  agents: [
    benchAgent({
      name: env('AGENT_NAME'),
      trips: Number(env('TRIPS', '2')),
      toolWaitMs: Number(env('TOOL_WAIT_MS', '0')),
      waitFirstOnly: env('WAIT_FIRST_ONLY', '0') === '1',
    }),
  ],
  owner: env('OWNER'),
  leaseMs: Number(env('LEASE_MS', '30000')),
  pollMs: Number(env('POLL_MS', '1000')),
  concurrency: Number(env('CONCURRENCY', '10')),
  onEvent: (event) =>
    print({ ...event, ...('kind' in event ? { runKind: event.kind } : {}), kind: 'event' }),
  ...(printBoundaries
    ? {
        onBoundary: (boundary) => {
          if (boundary.point === 'checkpoint.after' || boundary.point === 'effect.before')
            print({ kind: 'boundary', ...boundary });
        },
      }
    : {}),
});

await worker.start();
print({ kind: 'ready', owner: worker.owner });

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
  void (async () => {
    await worker.close();
    await store.close();
    await sql.end({ timeout: 5 });
  })();
});
