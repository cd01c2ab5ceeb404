import { createClient } from '@cairn/worker';
import { benchAgent } from '../agents.js';
import type { DrainSetup } from '../config.js';
import type { BenchContext } from '../context.js';
import { dropSchema, freshSchema, migrateSchema, openStore } from '../pg-setup.js';
import { ChildScript, type Line } from '../processes/child.js';
import { cpuBetween, readCpu } from '../proc-cpu.js';
import type { Metric, Row } from '../report.js';
import { figure, repeat, sleep } from '../stats.js';

interface DrainRep {
  runsPerSecond: number;
  workerCpuMs: number;
  backendsCpuMs: number;
  machineCpuMs: number;
  claims: number;
  claimQueries: number;
  leases: number;
  statements: number;
}

/** The last line of a kind a child printed. */
function latest(child: ChildScript, kind: string): Line | undefined {
  for (let i = child.lines.length - 1; i >= 0; i -= 1) {
    if (child.lines[i]!.kind === kind) return child.lines[i];
  }
  return undefined;
}

const setupName = (setup: DrainSetup) => `${setup.processes} x ${setup.concurrency}`;

/**
 * One drain: `runs` runs queued, then `setup.processes` worker processes (loaded and waiting) told to start
 * at once; timed from that signal to the last completion. Each process reports its own CPU time and store
 * calls; Postgres's CPU is read from /proc for the backends serving the bench database.
 */
async function drain(ctx: BenchContext, setup: DrainSetup, runs: number): Promise<DrainRep> {
  const { trips, poolMax } = ctx.config.drain;
  const schema = freshSchema('bench_drain');
  await migrateSchema(ctx, schema);
  const name = 'drain';
  const workers = Array.from(
    { length: setup.processes },
    (_, i) =>
      new ChildScript('worker-process.ts', {
        DATABASE_URL: ctx.url,
        CAIRN_SCHEMA: schema,
        OWNER: `drain-${i}`,
        AGENT_NAME: name,
        TRIPS: String(trips),
        CONCURRENCY: String(setup.concurrency),
        POOL_MAX: String(poolMax),
        START_ON_SIGNAL: '1',
        PRINT_EVENTS: '0',
        PROGRESS_MS: '50',
        COUNT_CALLS: '1',
      }),
  );
  let exited = false;
  for (const worker of workers) void worker.exited.then(() => (exited = true));
  const opened = openStore(ctx, schema, 10);
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= opened.close());
  try {
    const client = createClient({ store: opened.store });
    const agent = benchAgent({ name, trips });
    const preparing = Date.now();
    await Promise.all([
      ...workers.map((worker) => worker.waitFor((line) => line.kind === 'ready')),
      Promise.all(Array.from({ length: runs }, () => client.start(agent, 'go'))),
    ]);
    await close();
    ctx.log(
      `drain: ${runs} runs queued and ${setupName(setup)} processes loaded in ${Date.now() - preparing} ms`,
    );
    const cpuBefore = readCpu(ctx.database);
    const started = Date.now();
    for (const worker of workers) worker.kill('SIGUSR2');
    const deadline = started + 900_000;
    for (;;) {
      const progress = workers.map((worker) => latest(worker, 'progress'));
      const failed = progress.reduce((sum, line) => sum + ((line?.failed as number) ?? 0), 0);
      if (failed > 0) throw new Error(`${failed} runs failed`);
      const done = progress.reduce((sum, line) => sum + ((line?.completed as number) ?? 0), 0);
      if (done >= runs) break;
      if (exited) throw new Error('a worker process exited during the drain');
      if (Date.now() > deadline) throw new Error(`timed out with ${done} of ${runs} runs done`);
      await sleep(20);
    }
    const cpu = cpuBetween(cpuBefore, readCpu(ctx.database));
    const ended = Math.max(...workers.map((w) => latest(w, 'progress')!.lastCompletedAt as number));
    ctx.log(`drain: drained in ${ended - started} ms`);
    for (const worker of workers) worker.kill('SIGTERM');
    const stats = await Promise.all(workers.map((w) => w.waitFor((l) => l.kind === 'stats')));
    const calls = (method: string) =>
      stats.reduce((sum, s) => sum + ((s.calls as Record<string, number>)[method] ?? 0), 0);
    const total = (field: string) => stats.reduce((sum, s) => sum + (s[field] as number), 0);
    return {
      runsPerSecond: (runs * 1000) / (ended - started),
      workerCpuMs: total('cpuMs'),
      backendsCpuMs: cpu.backendsMs,
      machineCpuMs: cpu.machineMs,
      claims: calls('claim'),
      claimQueries: calls('claim') + calls('claimable') + calls('acquire'),
      leases: total('leases'),
      statements: total('statements'),
    };
  } finally {
    for (const worker of workers) worker.kill('SIGKILL');
    await Promise.all(workers.map((worker) => worker.exited));
    await close();
    await dropSchema(ctx, schema);
  }
}

/**
 * Row 6: a queue of 2-trip runs drained by one worker process and by several, with the CPU time and the
 * claim statements each run cost.
 */
export async function drainRow(ctx: BenchContext): Promise<Row> {
  const { reps, drain: config } = ctx.config;
  const metrics: Metric[] = [];
  for (const setup of config.setups) {
    const tag = `${setup.processes}x${setup.concurrency}`;
    const at = setupName(setup);
    ctx.log(`drain: ${config.runs} queued runs by ${at} worker processes x${reps}`);
    const results = await repeat(reps, () => drain(ctx, setup, config.runs));
    const per = (value: (r: DrainRep) => number) =>
      figure(results.map((r) => value(r) / config.runs));
    metrics.push(
      {
        key: `${tag}.runs_per_s`,
        label: `${at}: runs/s`,
        unit: '/s',
        figure: figure(results.map((r) => r.runsPerSecond)),
      },
      {
        key: `${tag}.worker_cpu_ms_per_run`,
        label: `${at}: worker CPU per run (process.cpuUsage)`,
        unit: 'ms',
        figure: per((r) => r.workerCpuMs),
      },
      {
        key: `${tag}.postgres_cpu_ms_per_run`,
        label: `${at}: Postgres CPU per run (its backends, /proc)`,
        unit: 'ms',
        figure: per((r) => r.backendsCpuMs),
      },
      {
        key: `${tag}.machine_cpu_ms_per_run`,
        label: `${at}: whole machine CPU per run (/proc/stat)`,
        unit: 'ms',
        figure: per((r) => r.machineCpuMs),
      },
      {
        key: `${tag}.claim_queries_per_run`,
        label: `${at}: claim queries per run (claim + claimable)`,
        unit: '',
        figure: per((r) => r.claimQueries),
      },
      {
        key: `${tag}.leases_per_run`,
        label: `${at}: leases granted per run`,
        unit: '',
        figure: per((r) => r.leases),
      },
      {
        key: `${tag}.statements_per_run`,
        label: `${at}: SQL statements per run (all of the workers')`,
        unit: '',
        figure: per((r) => r.statements),
      },
    );
  }
  return {
    key: 'drain',
    title: `6. Drain: ${config.runs.toLocaleString('en-US')} queued runs of ${config.trips} trips, by ${config.setups.map(setupName).join(', ')} worker processes (processes x concurrency)`,
    metrics,
    notes: [
      `timed from the signal that starts the waiting worker processes to the last completion; postgres pool max ${config.poolMax} per process (plus its lock and LISTEN connections)`,
      "worker CPU: the processes' own process.cpuUsage() from that signal; Postgres CPU: user + system time (/proc/<pid>/stat) of the backends serving the bench database, so the WAL writer, checkpointer and autovacuum are not in it; whole machine: busy time of every CPU from /proc/stat, other work on the machine included",
      'a claim query is one store.claim call (one statement, up to the free slots); leases granted per run above 1 means runs were claimed twice',
    ],
  };
}
