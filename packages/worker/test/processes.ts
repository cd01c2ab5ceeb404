import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

// tsx as a loader, not its CLI: the CLI runs the script in a grandchild, which signals would not reach.
const tsxLoader = createRequire(import.meta.url).resolve('tsx/esm');
const defaultScript = fileURLToPath(new URL('./fixtures/worker-process.ts', import.meta.url));

/** Which worker script a process runs, with which extra Node options. */
export interface WorkerProcessOptions {
  /** @defaultValue fixtures/worker-process.ts */
  script?: string;
  nodeArgs?: readonly string[];
}

/** One line a worker process printed. */
export interface Line {
  kind: 'event' | 'boundary' | 'effect' | 'span' | 'ready' | 'exited' | 'heap';
  type?: string;
  runId?: string;
  point?: string;
  effectId?: string | null;
  [key: string]: unknown;
}

/** A worker running in a child process, and everything it printed. */
export class WorkerProcess {
  readonly lines: Line[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;
  private readonly waiters = new Set<() => void>();

  constructor(env: Record<string, string>, options: WorkerProcessOptions = {}) {
    this.child = spawn(
      process.execPath,
      [
        ...(options.nodeArgs ?? []),
        '--import',
        tsxLoader,
        '--conditions=@cairn/source',
        options.script ?? defaultScript,
      ],
      {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    createInterface({ input: this.child.stdout! }).on('line', (text) => {
      try {
        this.lines.push(JSON.parse(text) as Line);
      } catch {
        return;
      }
      for (const wake of this.waiters) wake();
    });
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => {
        resolve({ code, signal });
        for (const wake of this.waiters) wake();
      }),
    );
  }

  get pid(): number {
    return this.child.pid!;
  }

  kill(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** Resolves with the first printed line matching `predicate` (bounded by the test's timeout). */
  waitFor(predicate: (line: Line) => boolean): Promise<Line> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.lines.find(predicate);
        if (found !== undefined) {
          this.waiters.delete(check);
          resolve(found);
        } else if (this.child.exitCode !== null || this.child.signalCode !== null) {
          this.waiters.delete(check);
          reject(new Error(`worker exited before printing what was awaited`));
        }
      };
      this.waiters.add(check);
      check();
    });
  }

  events(type: string): Line[] {
    return this.lines.filter((line) => line.kind === 'event' && line.type === type);
  }
}

/** Starts a worker process and waits until it is claiming. */
export async function startWorkerProcess(
  env: Record<string, string>,
  options: WorkerProcessOptions = {},
): Promise<WorkerProcess> {
  const worker = new WorkerProcess(env, options);
  await worker.waitFor((line) => line.kind === 'ready');
  return worker;
}

/**
 * The end of a test with worker processes: kills those still running (SIGKILL), waits for each to exit, then
 * closes the test's store and drops its schema.
 */
export async function endProcessTest(
  processes: WorkerProcess[],
  store: { close(): Promise<void> },
  sql: { unsafe(query: string): PromiseLike<unknown> },
  schema: string,
): Promise<void> {
  for (const worker of processes.splice(0)) {
    worker.kill('SIGKILL');
    await worker.exited;
  }
  await store.close();
  await sql.unsafe(`drop schema if exists "${schema}" cascade`);
}
