/**
 * `pnpm bench [--quick] [--out path] [--only row,row]`: Cairn against the physical limit and DBOS. Prints a
 * table on stdout and writes the same figures as JSON (default bench/results/latest.json).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { runBench } from './bench.js';
import { fullConfig, quickConfig } from './config.js';
import { renderTable } from './report.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
    only: { type: 'string' },
  },
});
const out = resolve(
  values.out ?? fileURLToPath(new URL('../results/latest.json', import.meta.url)),
);
const report = await runBench({
  config: values.quick === true ? quickConfig : fullConfig,
  ...(values.only === undefined ? {} : { only: values.only.split(',') }),
});
console.log(renderTable(report));
await mkdir(dirname(out), { recursive: true });
await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
console.log(`\nJSON: ${out}`);
if (report.rows.some((row) => row.error !== undefined && row.key !== 'dbos')) process.exitCode = 1;
