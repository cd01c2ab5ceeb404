import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { checkoutDirPrefix } from '../src/compare/checkout.js';
import type { CompareReport } from '../src/compare/report.js';
import { quickConfig } from '../src/config.js';
import { runBench, rowBuilders } from '../src/bench.js';
import { noRedisServerMessage } from '../src/redis-server.js';
import { renderTable } from '../src/report.js';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../..', import.meta.url));

// A smoke check of `pnpm bench --quick`: every row is produced and printed. Figures are never asserted.
describe('pnpm bench --quick', () => {
  it('produces every row, each with figures (DBOS, and Redis without a server, may instead say why not)', async () => {
    const report = await runBench({ config: quickConfig, log: () => undefined });
    expect(report.rows.map((row) => row.key)).toEqual(rowBuilders.map((row) => row.key));
    for (const row of report.rows) {
      expect(row.load?.before.cpus, `${row.key}: load recorded`).toBeGreaterThan(0);
      if (row.key === 'dbos' && row.error !== undefined) {
        expect(row.error, 'DBOS says why it did not run').not.toBe('');
        continue;
      }
      // The Redis row needs a Redis: without one it says so, and only so.
      if (row.key === 'redis_claim_poll' && row.error === noRedisServerMessage) continue;
      expect(row.error, `${row.key}: ${row.error}`).toBeUndefined();
      expect(row.metrics.length, row.key).toBeGreaterThan(0);
      for (const metric of row.metrics)
        expect(metric.figure.reps.length, metric.key).toBeGreaterThan(0);
    }
    expect(report.ratios.map((ratio) => ratio.key)).toContain('throughput_vs_dbos');
    const table = renderTable(report);
    for (const row of report.rows) expect(table).toContain(row.title);
    expect(table).toContain('load1');
  }, 120_000);

  // The command itself, as a user runs it, against this checkout's own commit (a fresh clone has it, so no
  // network): one cheap row, one round. TMPDIR points the temporary worktree at a directory of the test's own.
  it('--compare HEAD prints both sides and their ratio, writes both figures, and removes its worktree', async () => {
    const tmp = await mkdtemp(join(tmpdir(), 'cairn-compare-test-'));
    try {
      const out = join(tmp, 'compare.json');
      const { stdout } = await run(
        process.execPath,
        [
          '--no-deprecation',
          '--import',
          createRequire(import.meta.url).resolve('tsx/esm'),
          '--conditions=@cairn/source',
          join(repo, 'bench', 'src', 'main.ts'),
          '--compare',
          'HEAD',
          '--quick',
          '--only',
          'per_step',
          '--out',
          out,
        ],
        { cwd: repo, env: { ...process.env, TMPDIR: tmp }, maxBuffer: 16 * 2 ** 20 },
      );
      const report = JSON.parse(await readFile(out, 'utf8')) as CompareReport;
      expect(report.rounds).toBe(1);
      expect(report.this.failures).toEqual([]);
      expect(report.other).toMatchObject({ name: 'HEAD', failures: [] });
      expect(report.this.environment?.postgres).toBe(report.other.environment?.postgres);
      expect(report.rows.map((row) => row.key)).toEqual(['per_step']);
      const [row] = report.rows;
      // A busy machine adds a note; a missing or unmeasured row on either side would too.
      expect(row!.notes.filter((note) => !note.startsWith('the machine was busy'))).toEqual([]);
      expect(row!.metrics.length).toBeGreaterThan(0);
      for (const metric of row!.metrics) {
        expect(metric.this?.reps, metric.key).toHaveLength(1);
        expect(metric.other?.reps, metric.key).toHaveLength(1);
      }
      // A metric that is 0 on the other side has no ratio; the timings never are.
      const timed = row!.metrics.find((metric) => metric.unit === 'ms')!;
      expect(timed.ratio?.reps).toHaveLength(1);
      const lines = stdout.split('\n');
      expect(lines.find((line) => /^\s+metric\s/.test(line))).toMatch(/\bthis\s+HEAD\s+ratio\b/);
      const printed = lines.find((line) => line.trimStart().startsWith(timed.label));
      expect(printed, 'both figures and their ratio').toMatch(/\s[\d.]+\s+[\d.]+\s+[\d.]+x\s+ms$/);
      const left = (await readdir(tmp)).filter((name) => name.startsWith(checkoutDirPrefix));
      expect(left, 'the temporary worktree is removed').toEqual([]);
      const { stdout: worktrees } = await run('git', ['worktree', 'list', '--porcelain'], {
        cwd: repo,
      });
      expect(worktrees).not.toContain(tmp);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  }, 120_000);
});
