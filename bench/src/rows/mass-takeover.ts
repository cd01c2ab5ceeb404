import { createClient } from '@cairn/worker';
import { benchAgent } from '../agents.js';
import type { BenchContext } from '../context.js';
import { heldRunsEnv } from '../held-runs-env.js';
import { dropSchema, freshSchema, migrateSchema, openStore } from '../pg-setup.js';
import { ChildScript, type Line } from '../processes/child.js';
import type { Row } from '../report.js';
import { figure, repeat, sleep } from '../stats.js';

interface MassRep {
  toFirstClaim: number;
  toAllClaimed: number;
  toAllCompleted: number;
  completed: number;
  /** Tool calls that ran more than once, across both processes. */
  ranTwice: number;
  recoveriesPerRun: number;
}

/** The lines of `kind` (and event `type`) about runs in `runIds`. */
const about =
  (runIds: ReadonlySet<string>, kind: string, type?: string) =>
  (line: Line): boolean =>
    line.kind === kind &&
    (type === undefined || line.type === type) &&
    runIds.has(line.runId as string);

/**
 * One repetition: `runs` runs held in their first (non-idempotent) tool call by one worker process, which is
 * SIGKILLed; a surviving process, started and idle before the kill, takes them all over.
 */
async function massTakeover(ctx: BenchContext, runs: number): Promise<MassRep> {
  const { pollMs } = ctx.config.takeover;
  const schema = freshSchema('bench_mass');
  await migrateSchema(ctx, schema);
  const name = 'mass';
  const env = (owner: string) => ({
    ...heldRunsEnv(ctx, { store: 'pg', schema }, name, owner),
    CONCURRENCY: String(runs),
    POLL_MS: String(pollMs),
    PRINT_TOOL_RUNS: '1',
  });
  const { store, close } = openStore(ctx, schema, 4);
  const holder = new ChildScript('worker-process.ts', env('holder'));
  // Loaded alongside the holder, but claiming only once the holder holds every run.
  const survivor = new ChildScript('worker-process.ts', {
    ...env('survivor'),
    START_ON_SIGNAL: '1',
  });
  try {
    await Promise.all([holder, survivor].map((child) => child.waitFor((l) => l.kind === 'ready')));
    const client = createClient({ store });
    const agent = benchAgent({ name, trips: 2 });
    const started = await Promise.all(
      Array.from({ length: runs }, () => client.start(agent, 'go')),
    );
    const runIds = new Set(started.map((run) => run.runId));
    const count = (child: ChildScript, matches: (line: Line) => boolean) =>
      new Set(child.lines.filter(matches).map((line) => line.runId as string)).size;
    const inTool = about(runIds, 'tool');
    await holder.waitUntil(() => count(holder, inTool) >= runs, 300_000);
    survivor.kill('SIGUSR2');
    await survivor.waitFor((line) => line.kind === 'event' && line.type === 'started');
    // Let the survivor settle into its idle poll loop, at a random phase of it.
    await sleep(200 + Math.random() * pollMs);
    const killedAt = Date.now();
    holder.kill('SIGKILL');
    await holder.exited;
    const claimed = about(runIds, 'event', 'claimed');
    const completed = about(runIds, 'event', 'completed');
    await survivor.waitUntil(() => count(survivor, claimed) >= runs, 300_000);
    await survivor.waitUntil(() => count(survivor, completed) >= runs, 300_000);
    const times = (matches: (line: Line) => boolean) =>
      survivor.lines.filter(matches).map((line) => (line.t as number) - killedAt);
    const calls = new Map<string, number>();
    for (const line of [...holder.lines, ...survivor.lines].filter(inTool)) {
      const key = `${line.runId as string}/${line.call as string}`;
      calls.set(key, (calls.get(key) ?? 0) + 1);
    }
    const records = (await store.list({ name })).filter((record) => runIds.has(record.runId));
    return {
      toFirstClaim: Math.min(...times(claimed)),
      toAllClaimed: Math.max(...times(claimed)),
      toAllCompleted: Math.max(...times(completed)),
      completed: records.filter((record) => record.status === 'completed').length,
      ranTwice: [...calls.values()].filter((n) => n > 1).length,
      recoveriesPerRun: records.reduce((sum, record) => sum + record.recoveries, 0) / runs,
    };
  } finally {
    holder.kill('SIGKILL');
    survivor.kill('SIGKILL');
    await Promise.all([holder.exited, survivor.exited]);
    await close();
    await dropSchema(ctx, schema);
  }
}

/**
 * Row 8: a worker process holding many runs is SIGKILLed: how fast a survivor takes them all over, and
 * whether any run is lost or any tool call doubled.
 */
export async function massTakeoverRow(ctx: BenchContext): Promise<Row> {
  const { reps, massTakeover: config, takeover } = ctx.config;
  ctx.log(`mass takeover: SIGKILL a worker process holding ${config.runs} runs x${reps}`);
  const results = await repeat(reps, () => massTakeover(ctx, config.runs));
  return {
    key: 'mass_takeover',
    title: `8. Mass takeover: SIGKILL of a worker process holding ${config.runs.toLocaleString('en-US')} runs mid-tool, to the survivor holding them all`,
    metrics: [
      {
        key: 'to_first_claim_ms',
        label: "SIGKILL to the survivor's first claim",
        unit: 'ms',
        figure: figure(results.map((r) => r.toFirstClaim)),
      },
      {
        key: 'to_all_claimed_ms',
        label: 'SIGKILL to the survivor holding every run',
        unit: 'ms',
        figure: figure(results.map((r) => r.toAllClaimed)),
      },
      {
        key: 'claims_per_s',
        label: 'runs taken over per second (runs / SIGKILL to all claimed)',
        unit: '/s',
        figure: figure(results.map((r) => (config.runs * 1000) / r.toAllClaimed)),
      },
      {
        key: 'to_all_completed_ms',
        label: 'SIGKILL to every run completed',
        unit: 'ms',
        figure: figure(results.map((r) => r.toAllCompleted)),
      },
      {
        key: 'completed_share',
        label: 'runs completed / runs (1 = none lost)',
        unit: '',
        figure: figure(results.map((r) => r.completed / config.runs)),
      },
      {
        key: 'ran_twice',
        label: 'tool calls run twice (non-idempotent: must be 0)',
        unit: '',
        figure: figure(results.map((r) => r.ranTwice)),
      },
      {
        key: 'recoveries_per_run',
        label: 'recoveries per run (1 = each taken over once)',
        unit: '',
        figure: figure(results.map((r) => r.recoveriesPerRun)),
      },
    ],
    notes: [
      `two worker processes at concurrency ${config.runs}, poll ${takeover.pollMs} ms, lease 30 s; the holder is killed inside every run's first tool call, the survivor started and idle before the kill`,
      'tool calls counted by run and call id as each started, in both processes: the interrupted call is reported to the model as outcome unknown, never run again',
    ],
  };
}
