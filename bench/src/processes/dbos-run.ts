/**
 * One DBOS Transact process for the bench, kept for a whole row so that every measure runs warm. It launches,
 * runs WARMUP workflows, prints `ready`, then runs one command per JSON line on its stdin:
 *   {"mode": "sequential" | "concurrent", "workflows": n, "id": k}: prints a `result` line (same id) with the
 *     elapsed time, every step's latency, and the WAL bytes and transaction ids the server wrote meanwhile
 *     (server-wide), read on a connection of its own right before and after the workflows;
 *   {"mode": "exit"}: shuts down and exits (as it does when stdin closes).
 * Environment: DBOS_SYSTEM_DATABASE_URL, STEPS, POOL_SIZE, WARMUP.
 */
import { createInterface } from 'node:readline';
import { DBOS } from '@dbos-inc/dbos-sdk';
import postgres from 'postgres';

const env = (name: string, fallback?: string): string => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is required`);
  return value;
};
const url = env('DBOS_SYSTEM_DATABASE_URL');
const steps = Number(env('STEPS', '10'));
const warmup = Number(env('WARMUP', '5'));
const print = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);

DBOS.setConfig({
  name: 'cairn-bench',
  systemDatabaseUrl: url,
  systemDatabasePoolSize: Number(env('POOL_SIZE', '10')),
  logLevel: 'error',
});

let stepTimes: number[] = [];
const workflow = DBOS.registerWorkflow(
  async (n: number): Promise<number> => {
    let sum = 0;
    for (let i = 0; i < steps; i += 1) {
      const t0 = performance.now();
      sum += await DBOS.runStep(async () => Promise.resolve(i), { name: `step${i}` });
      stepTimes.push(performance.now() - t0);
    }
    return sum + n;
  },
  { name: 'benchWorkflow' },
);

const counters = postgres(url, { max: 1, onnotice: () => undefined });
async function serverPosition(): Promise<{ lsn: string; xid: number }> {
  const [row] = await counters.unsafe<Array<{ lsn: string; xid: string }>>(
    'SELECT pg_current_wal_lsn()::text AS lsn, pg_snapshot_xmax(pg_current_snapshot())::text AS xid',
  );
  return { lsn: row!.lsn, xid: Number(row!.xid) };
}

async function measure(mode: string, workflows: number, id: unknown): Promise<void> {
  stepTimes = [];
  const before = await serverPosition();
  const started = performance.now();
  if (mode === 'sequential') {
    for (let i = 0; i < workflows; i += 1) await workflow(i);
  } else if (mode === 'concurrent') {
    const handles = await Promise.all(
      Array.from({ length: workflows }, (_, i) => DBOS.startWorkflow(workflow)(i)),
    );
    await Promise.all(handles.map((handle) => handle.getResult()));
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
  const elapsed = performance.now() - started;
  const [row] = await counters.unsafe<Array<{ wal: string; xid: string }>>(
    'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::text AS wal, pg_snapshot_xmax(pg_current_snapshot())::text AS xid',
    [before.lsn],
  );
  print({
    kind: 'result',
    id,
    mode,
    workflows,
    steps,
    elapsed,
    stepTimes,
    walBytes: Number(row!.wal),
    writeXacts: Number(row!.xid) - before.xid,
  });
}

await DBOS.launch();
for (let i = 0; i < warmup; i += 1) await workflow(-1 - i);
await serverPosition();
print({ kind: 'ready' });

for await (const text of createInterface({ input: process.stdin })) {
  const command = JSON.parse(text) as { mode: string; workflows?: number; id?: unknown };
  if (command.mode === 'exit') break;
  await measure(command.mode, command.workflows ?? 0, command.id);
}
await counters.end({ timeout: 5 });
await DBOS.shutdown();
process.exit(0);
