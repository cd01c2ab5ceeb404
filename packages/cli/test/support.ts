import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { DurableStore } from '@cairn/sdk';

// `cairn` run from its source, as `node dist/cairn.js` runs it once built; tsx as a loader (not its CLI, whose
// grandchild process would not get the test's signals).
const tsxLoader = createRequire(import.meta.url).resolve('tsx/esm');
const bin = fileURLToPath(new URL('../src/cairn.ts', import.meta.url));

/** The user module of `--module` in these tests: the seeded store and the `travel` agent. */
export const moduleFixture = fileURLToPath(new URL('./fixtures/cairn-module.ts', import.meta.url));

/** How one `cairn` process ended, and what it printed. */
export interface CairnResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A `cairn` process while it runs: its output so far, and how to stop it. */
export interface CairnProcess {
  readonly stdout: string;
  readonly stderr: string;
  exited: Promise<CairnResult>;
  kill(signal: NodeJS.Signals): void;
}

/** Starts `cairn args` with `env` over an environment cleared of the parent's store and CAIRN_* settings. */
export function startCairn(args: readonly string[], env: Record<string, string>): CairnProcess {
  const child = spawn(
    process.execPath,
    ['--import', tsxLoader, '--conditions=@cairn/source', bin, ...args],
    {
      env: {
        ...Object.fromEntries(
          Object.entries(process.env).filter(
            ([name]) =>
              !/^(CAIRN_|npm_|DATABASE_URL$|REDIS_URL$|NO_COLOR$|FORCE_COLOR$)/.test(name),
          ),
        ),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<CairnResult>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return {
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    exited,
    kill: (signal) => child.kill(signal),
  };
}

/** Runs `cairn args` to its end. */
export function cairn(args: readonly string[], env: Record<string, string>): Promise<CairnResult> {
  return startCairn(args, env).exited;
}

/** Parses a `--json` output, failing the test with what was printed when it is not JSON. */
export function json<T = Record<string, unknown>>(text: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new Error(`not JSON: ${text}`);
  }
}

/** A seeded store, and the environment that points `cairn` at it. */
export interface SuiteStore {
  store: DurableStore;
  env: Record<string, string>;
  /**
   * Another store instance on the same data, as a worker process would have: closing it without releasing what
   * it holds is how its process dies.
   */
  another(): DurableStore & { close(): Promise<void> };
  close(): Promise<void>;
}
