import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { BenchReport } from '../report.js';

/** What one side's bench gave in one round. */
export interface SideResult {
  report?: BenchReport;
  /** Set when it wrote no report: how it ended and the last lines it printed. */
  failure?: string;
  /** Its exit code (1 when a row failed, as `pnpm bench` exits). */
  code: number | null;
  /** The signal that killed it, if one did. */
  signal: NodeJS.Signals | null;
  pid: number;
}

/** How one side's bench is run. */
export interface SideRun {
  /** The checkout whose `bench/src/main.ts` runs, with its own dependencies. */
  root: string;
  /** Put before each line of its progress on this process's stderr. */
  tag: string;
  /** Its arguments (`--quick`, `--only`); `--out` is added. */
  args: readonly string[];
  out: string;
  env: Record<string, string>;
  /** Aborting sends the child SIGINT; the result then comes when it has exited. */
  signal: AbortSignal;
}

const tailLines = 30;

/**
 * Runs one checkout's own `bench/src/main.ts` in a child Node process (this Node, tsx as a loader from that
 * checkout, on its `src` through `@cairn/source`) and reads the JSON report it wrote. Only the flags every
 * bench since `--out` and `--only` knows are passed, so an older commit's bench runs unchanged. Its progress
 * goes to this process's stderr; its own table is dropped, since the comparison prints its figures.
 */
export async function runSide(run: SideRun): Promise<SideResult> {
  const tsxLoader = createRequire(join(run.root, 'bench', 'package.json')).resolve('tsx/esm');
  const main = join(run.root, 'bench', 'src', 'main.ts');
  const child = spawn(
    process.execPath,
    [
      '--no-deprecation',
      '--import',
      tsxLoader,
      '--conditions=@cairn/source',
      main,
      ...run.args,
      '--out',
      run.out,
    ],
    { cwd: run.root, env: { ...process.env, ...run.env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const tail: string[] = [];
  const keep = (line: string) => {
    tail.push(line);
    if (tail.length > tailLines) tail.shift();
  };
  createInterface({ input: child.stdout }).on('line', keep);
  createInterface({ input: child.stderr }).on('line', (line) => {
    keep(line);
    process.stderr.write(`${run.tag} ${line}\n`);
  });
  const stop = () => child.kill('SIGINT');
  run.signal.addEventListener('abort', stop, { once: true });
  const { code, signal } = await new Promise<{
    code: number | null;
    signal: NodeJS.Signals | null;
  }>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (exitCode, exitSignal) => resolve({ code: exitCode, signal: exitSignal }));
  }).finally(() => run.signal.removeEventListener('abort', stop));
  try {
    return {
      report: JSON.parse(await readFile(run.out, 'utf8')) as BenchReport,
      code,
      signal,
      pid: child.pid!,
    };
  } catch {
    const how = signal === null ? `exited with code ${code}` : `was killed by ${signal}`;
    return {
      code,
      signal,
      pid: child.pid!,
      failure: `its bench ${how} and wrote no report; its last lines:\n${tail.join('\n')}`,
    };
  }
}
