import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import postgres from 'postgres';
import type { BenchContext } from '../context.js';
import { costBetween, readCounters, waitForBackendsToExit, type Cost } from '../pg-counters.js';
import { ChildScript } from '../processes/child.js';
import type { Metric, Row } from '../report.js';
import { figure, quantile, repeat } from '../stats.js';

interface DbosRun {
  elapsed: number;
  stepTimes: number[];
  cost: Cost;
}

/** Row 4: DBOS Transact on the same server, in a database of its own, one child process per repetition. */
export async function dbosRow(ctx: BenchContext): Promise<Row> {
  const { reps, dbos } = ctx.config;
  const database = `${ctx.database}_dbos`;
  const url = new URL(ctx.url);
  url.pathname = `/${database}`;
  await ctx.admin.unsafe(`CREATE DATABASE "${database}"`);
  try {
    const run = async (mode: string, workflows: number): Promise<DbosRun> => {
      await waitForBackendsToExit(ctx.admin, database);
      const before = await readCounters(ctx.admin, database);
      const child = new ChildScript('dbos-run.ts', {
        DBOS_SYSTEM_DATABASE_URL: url.toString(),
        MODE: mode,
        WORKFLOWS: String(workflows),
        STEPS: String(dbos.steps),
        POOL_SIZE: String(dbos.poolSize),
      });
      const result = await child.waitFor((line) => line.kind === 'result', 600_000);
      const exit = await child.exited;
      if (exit.code !== 0)
        throw new Error(`DBOS exited with ${exit.code ?? exit.signal}: ${child.errorOutput}`);
      await waitForBackendsToExit(ctx.admin, database);
      const cost = await costBetween(ctx.admin, before, await readCounters(ctx.admin, database));
      return { elapsed: result.elapsed as number, stepTimes: result.stepTimes as number[], cost };
    };

    ctx.log('dbos: launch and warm-up only (the baseline subtracted from the costs below)');
    // The first launch migrates DBOS's system database; the baseline is the second.
    await run('idle', 0);
    const baseline = (await run('idle', 0)).cost;
    const minus = (cost: Cost): Cost => ({
      commits: cost.commits - baseline.commits,
      writeXacts: cost.writeXacts - baseline.writeXacts,
      walBytes: cost.walBytes - baseline.walBytes,
    });
    const steps = dbos.workflows * dbos.steps;
    const metrics: Metric[] = [];
    for (const mode of ['sequential', 'concurrent'] as const) {
      ctx.log(`dbos: ${dbos.workflows} ${mode} workflows of ${dbos.steps} steps x${reps}`);
      const results = await repeat(reps, () => run(mode, dbos.workflows));
      const costs = results.map((r) => minus(r.cost));
      if (mode === 'sequential') {
        metrics.push(
          {
            key: 'sequential.step_ms',
            label: 'sequential: ms per step (workflow time / steps)',
            unit: 'ms',
            figure: figure(results.map((r) => r.elapsed / steps)),
          },
          {
            key: 'sequential.step_median_ms',
            label: 'sequential: step latency, median',
            unit: 'ms',
            figure: figure(results.map((r) => quantile(r.stepTimes, 0.5))),
          },
          {
            key: 'sequential.step_p99_ms',
            label: 'sequential: step latency, p99',
            unit: 'ms',
            figure: figure(results.map((r) => quantile(r.stepTimes, 0.99))),
          },
        );
      } else {
        metrics.push({
          key: 'concurrent.steps_per_s',
          label: `concurrent (${dbos.workflows} at once): steps/s end to end`,
          unit: '/s',
          figure: figure(results.map((r) => (steps * 1000) / r.elapsed)),
        });
      }
      metrics.push(
        {
          key: `${mode}.commits_per_step`,
          label: `${mode}: commits per step (xact_commit, reads included)`,
          unit: '',
          figure: figure(costs.map((c) => c.commits / steps)),
        },
        {
          key: `${mode}.write_xacts_per_step`,
          label: `${mode}: writing transactions per step (xids)`,
          unit: '',
          figure: figure(costs.map((c) => c.writeXacts / steps)),
        },
        {
          key: `${mode}.wal_bytes_per_step`,
          label: `${mode}: WAL bytes per step`,
          unit: 'B',
          figure: figure(costs.map((c) => c.walBytes / steps)),
        },
      );
    }
    return {
      key: 'dbos',
      title: `4. DBOS Transact ${dbosVersion()}: ${dbos.workflows} workflows of ${dbos.steps} trivial steps, same server`,
      metrics,
      notes: [
        `one child process per repetition, system database "${database}" on the same server, pool ${dbos.poolSize}; concurrent = DBOS.startWorkflow x${dbos.workflows}, then every handle's getResult()`,
        `costs are after subtracting a launch + 5 warm-up workflows + shutdown baseline (${baseline.commits} commits, ${baseline.writeXacts} writing xacts, ${baseline.walBytes} WAL bytes)`,
      ],
    };
  } finally {
    await waitForBackendsToExit(ctx.admin, database);
    const drop = postgres(ctx.url, { max: 1, onnotice: () => undefined });
    await drop
      .unsafe(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`)
      .finally(() => drop.end({ timeout: 5 }));
  }
}

/** The installed DBOS version, read from its package.json next to its entry point. */
function dbosVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@dbos-inc/dbos-sdk');
  const manifest = JSON.parse(readFileSync(join(dirname(entry), '../../package.json'), 'utf8')) as {
    version: string;
  };
  return manifest.version;
}
