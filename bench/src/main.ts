/**
 * `pnpm bench [--quick] [--out path] [--only row,row]`: Cairn against the physical limit and DBOS. Prints a
 * table on stdout and writes the same figures as JSON (default bench/results/latest.json).
 *
 * `pnpm bench --compare <ref> [--rounds N] [--quick] [--only row,row] [--out path]`: this work tree against
 * another commit, each figure side by side with their ratio (JSON default bench/results/compare.json).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { runBench } from './bench.js';
import { CompareInterruptedError, runCompare } from './compare/run.js';
import { renderComparison } from './compare/report.js';
import { fullConfig, quickConfig } from './config.js';
import { renderTable } from './report.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
    only: { type: 'string' },
    compare: { type: 'string' },
    rounds: { type: 'string' },
  },
});
const quick = values.quick === true;
const only = values.only?.split(',');

async function writeJson(value: unknown, defaultName: string): Promise<void> {
  const out = resolve(
    values.out ?? fileURLToPath(new URL(`../results/${defaultName}`, import.meta.url)),
  );
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify(value, null, 2)}\n`);
  console.log(`\nJSON: ${out}`);
}

if (values.compare === undefined) {
  if (values.rounds !== undefined) throw new Error('--rounds goes with --compare <ref>');
  const report = await runBench({
    config: quick ? quickConfig : fullConfig,
    ...(only === undefined ? {} : { only }),
  });
  console.log(renderTable(report));
  await writeJson(report, 'latest.json');
  if (report.rows.some((row) => row.error !== undefined && row.key !== 'dbos'))
    process.exitCode = 1;
} else {
  const rounds = values.rounds === undefined ? (quick ? 1 : 2) : Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1)
    throw new Error(`--rounds ${values.rounds}: a whole number of at least 1`);
  try {
    const report = await runCompare({
      ref: values.compare,
      rounds,
      quick,
      ...(only === undefined ? {} : { only }),
    });
    console.log(renderComparison(report));
    await writeJson(report, 'compare.json');
    if (report.this.failures.length + report.other.failures.length > 0) process.exitCode = 1;
  } catch (error) {
    // A bad ref or a failed install is said in a sentence; the worktree is already gone.
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = error instanceof CompareInterruptedError ? 130 : 1;
  }
}
