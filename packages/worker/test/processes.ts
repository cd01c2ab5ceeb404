import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { LineProcess } from '@cairn/testing';

// tsx as a loader, not its CLI: the CLI runs the script in a grandchild, which signals would not reach.
const tsxLoader = createRequire(import.meta.url).resolve('tsx/esm');
const script = fileURLToPath(new URL('./fixtures/worker-process.ts', import.meta.url));

/** One line a worker process printed. */
export interface Line {
  kind: 'event' | 'boundary' | 'effect' | 'span' | 'ready' | 'exited';
  type?: string;
  runId?: string;
  point?: string;
  effectId?: string | null;
  [key: string]: unknown;
}

/** A worker running in a child process, and everything it printed. */
export class WorkerProcess extends LineProcess<Line> {
  constructor(env: Record<string, string>) {
    super(['--import', tsxLoader, '--conditions=@cairn/source', script], env);
  }

  events(type: string): Line[] {
    return this.linesOf('event', type);
  }
}

/** Starts a worker process and waits until it is claiming. */
export async function startWorkerProcess(env: Record<string, string>): Promise<WorkerProcess> {
  const worker = new WorkerProcess(env);
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
