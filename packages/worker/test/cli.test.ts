import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { useTestDatabase } from '@cairn/testing';
import postgres from 'postgres';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

// `cairn-worker` run from its source, as `node dist/cli.js` runs it once built; tsx as a loader (not its
// CLI, whose grandchild process signals would not reach).
const tsxLoader = createRequire(import.meta.url).resolve('tsx/esm');
const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const fixture = fileURLToPath(new URL('./fixtures/cli-module.ts', import.meta.url));
const pgFixture = fileURLToPath(new URL('./fixtures/cli-pg-module.ts', import.meta.url));
const database = useTestDatabase({ prefix: 'cairn_worker_cli' });

interface Line {
  type?: string;
  runId?: string;
  owner?: string;
  signal?: string;
  fixture?: string;
  leaseMs?: number;
}

/**
 * One `cairn-worker` process: its JSON lines, its stderr, and how it ended. `throughShell` starts it as npm
 * runs a bin, under a `sh -c` that waits for it: dash (/bin/sh on Debian and Ubuntu) does so for npm's
 * `sh -c 'cairn-worker' …`; the `; exit` makes every shell do so. `exited` is then the shell's end.
 */
function run(args: string[], env: Record<string, string> = {}, { throughShell = false } = {}) {
  const command = [
    process.execPath,
    '--import',
    tsxLoader,
    '--conditions=@cairn/source',
    cli,
    ...args,
  ];
  const child = spawn(
    throughShell ? 'sh' : process.execPath,
    throughShell ? ['-c', '"$@"; exit $?', 'sh', ...command] : command.slice(1),
    {
      // The parent's CAIRN_* settings, and whether it was started by npm, must not leak into what a test
      // asserts.
      env: {
        ...Object.fromEntries(
          Object.entries(process.env).filter(([name]) => !/^(CAIRN_|npm_)/.test(name)),
        ),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const lines: Line[] = [];
  let stdout = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const stdoutLines = createInterface({ input: child.stdout });
  /** Resolves when every process writing to stdout (the worker, and the shell) is gone. */
  const ended = new Promise<void>((resolve) => stdoutLines.once('close', resolve));
  stdoutLines.on('line', (text) => {
    stdout += `${text}\n`;
    try {
      lines.push(JSON.parse(text) as Line);
    } catch {
      return;
    }
    for (const wake of waiters) wake();
  });
  const shellExited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => {
      resolve({ code, signal });
      for (const wake of waiters) wake();
    }),
  );
  return {
    lines,
    exited,
    ended,
    shellExited,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    kill: (signal: NodeJS.Signals) => child.kill(signal),
    /** Resolves with the first line matching `predicate`; rejects if the process ends first. */
    waitFor(predicate: (line: Line) => boolean): Promise<Line> {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = lines.find(predicate);
          if (found !== undefined) {
            waiters.delete(check);
            resolve(found);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            waiters.delete(check);
            reject(new Error(`cairn-worker exited first; stderr: ${stderr}`));
          }
        };
        waiters.add(check);
        check();
      });
    },
  };
}

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'cairn-cli-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('cairn-worker', () => {
  it('runs the module’s agents, then on SIGTERM hands the run in flight over, calls close() and exits 0', async () => {
    const worker = run([fixture, '--owner', 'from-flag', '--concurrency', '4'], {
      CAIRN_OWNER: 'from-env',
      CAIRN_LEASE_MS: '20000',
      HOLD_MS: '500',
    });
    expect(await worker.waitFor((l) => l.type === 'started')).toMatchObject({ owner: 'from-flag' });
    await worker.waitFor((l) => l.type === 'completed' && l.runId === 'quick-1');
    const { leaseMs } = await worker.waitFor((l) => l.fixture === 'tool-started');
    expect(leaseMs).toBeGreaterThan(15_000);
    expect(leaseMs).toBeLessThanOrEqual(20_000);

    worker.kill('SIGTERM');
    expect(await worker.exited).toEqual({ code: 0, signal: null });
    const types = worker.lines.map((l) => l.type ?? `fixture:${l.fixture}`);
    expect(worker.lines.find((l) => l.type === 'closing')).toMatchObject({ signal: 'SIGTERM' });
    expect(worker.lines.filter((l) => l.type === 'handed_over')).toMatchObject([
      { runId: 'held-1' },
    ]);
    // Handed over, then closed, then the module's close(): nothing was cut short.
    expect(types.slice(-3)).toEqual(['handed_over', 'closed', 'fixture:closed']);
    expect(worker.stderr).toBe('');
  });

  it('a second signal exits at once with 130, without waiting for the run in flight', async () => {
    const worker = run([fixture], { HOLD_MS: '60000' });
    await worker.waitFor((l) => l.fixture === 'tool-started');
    worker.kill('SIGTERM');
    await worker.waitFor((l) => l.type === 'closing');
    worker.kill('SIGTERM');
    expect(await worker.exited).toEqual({ code: 130, signal: null });
    expect(worker.lines.some((l) => l.type === 'handed_over')).toBe(false);
  });

  it('takes its settings from CAIRN_* variables, prints text logs with --log text, stays up while idle', async () => {
    const worker = run([fixture, '--log', 'text'], { CAIRN_OWNER: 'from-env', HOLD_MS: '0' });
    await new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => {
        if (/ completed runId=held-1/.test(worker.stdout)) {
          clearInterval(timer);
          resolve();
        }
      }, 20);
      void worker.exited.then(() => {
        clearInterval(timer);
        reject(new Error(worker.stderr));
      });
    });
    expect(worker.stdout).toMatch(/^\S+ started owner=from-env$/m);
    // Idle, it stays up until it is told to stop.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await Promise.race([worker.exited, 'running'])).toBe('running');
    worker.kill('SIGINT');
    expect(await worker.exited).toEqual({ code: 0, signal: null });
  });

  it('--help prints the usage and every setting’s environment variable', async () => {
    const help = run(['--help']);
    expect(await help.exited).toEqual({ code: 0, signal: null });
    expect(help.stdout).toMatch(/^Usage: cairn-worker \[options\] <module>/);
    for (const variable of [
      'CAIRN_CONCURRENCY',
      'CAIRN_LEASE_MS',
      'CAIRN_HEARTBEAT_MS',
      'CAIRN_OWNER',
      'CAIRN_MAX_RECOVERIES',
    ]) {
      expect(help.stdout).toContain(variable);
    }
  });

  it.each([
    { name: 'no module', args: [], env: {}, error: /Which module\?/ },
    {
      name: 'a concurrency of 0',
      args: ['--concurrency', '0', fixture],
      env: {},
      error: /CAIRN_CONCURRENCY.*positive integer/,
    },
    {
      name: 'a lease of "30s"',
      args: [fixture],
      env: { CAIRN_LEASE_MS: '30s' },
      error: /CAIRN_LEASE_MS.*"30s"/,
    },
    {
      name: 'an unknown log format',
      args: [fixture, '--log', 'xml'],
      env: {},
      error: /json, text or silent/,
    },
    { name: 'an unknown flag', args: ['--nope', fixture], env: {}, error: /--nope/ },
    { name: 'a missing module', args: ['./no/such/module.js'], env: {}, error: /No module at/ },
  ])('refuses $name with exit code 2', async ({ args, env, error }) => {
    const worker = run(args, env);
    expect((await worker.exited).code).toBe(2);
    expect(worker.stderr).toMatch(error);
    expect(worker.lines).toEqual([]);
  });

  it('exits 1 when the module exports no store', async () => {
    const module = join(scratch, 'no-store.mjs');
    await writeFile(
      module,
      "export const agents = [{ kind: 'agent', name: 'a', definition: {} }];\n",
    );
    const worker = run([module]);
    expect((await worker.exited).code).toBe(1);
    expect(worker.stderr).toMatch(/exports no store/);
  });
});

describe('cairn-worker whose parent exits without passing the signal on', () => {
  /** Workers a test left running when it failed. */
  const started = new Set<number>();
  afterEach(() => {
    for (const pid of started) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    started.clear();
  });
  /** The worker's pid, from its default owner `host:pid:random`. */
  const pidOf = (line: Line) => {
    const pid = Number(line.owner?.split(':').at(-2));
    started.add(pid);
    return pid;
  };
  /** Whether the worker is gone (its stdout closed) within a generous wait. */
  const gone = (worker: ReturnType<typeof run>, ms = 20_000) =>
    Promise.race([
      worker.ended.then(() => true),
      new Promise<boolean>((resolve) => setTimeout(resolve, ms, false)),
    ]);

  it('started by npm (`npx cairn-worker`): when the shell npm ran it through is killed, hands over, closes and exits', async () => {
    // npm forwards SIGTERM only to the `sh -c` it spawned; the signal kills that shell, never the worker.
    const worker = run(
      [fixture],
      { npm_lifecycle_event: 'npx', HOLD_MS: '1000' },
      { throughShell: true },
    );
    pidOf(await worker.waitFor((l) => l.type === 'started'));
    await worker.waitFor((l) => l.fixture === 'tool-started');
    worker.kill('SIGTERM');
    await worker.shellExited;

    expect(await gone(worker)).toBe(true);
    const types = worker.lines.map((l) => l.type ?? `fixture:${l.fixture}`);
    expect(types.slice(-4)).toEqual(['closing', 'handed_over', 'closed', 'fixture:closed']);
    expect(worker.lines.find((l) => l.type === 'handed_over')).toMatchObject({ runId: 'held-1' });
    expect(worker.stderr).toMatch(/the process that started it \(pid \d+\) exited/);
  });

  it('not started by npm (`nohup cairn-worker &`): outlives its parent, and still stops on SIGTERM', async () => {
    const worker = run([fixture], { HOLD_MS: '0' }, { throughShell: true });
    const pid = pidOf(await worker.waitFor((l) => l.type === 'started'));
    await worker.waitFor((l) => l.type === 'completed' && l.runId === 'held-1');
    worker.kill('SIGTERM');
    await worker.shellExited;

    expect(await gone(worker, 2_000)).toBe(false);
    process.kill(pid, 'SIGTERM');
    expect(await gone(worker)).toBe(true);
    expect(worker.lines.find((l) => l.type === 'closing')).toMatchObject({ signal: 'SIGTERM' });
    expect(worker.lines.at(-1)).toMatchObject({ fixture: 'closed' });
  });
});

describe('cairn-worker on a schema that is not migrated', () => {
  it('exits 1 naming the command to run; `cairn-worker migrate` migrates; then the worker runs', async () => {
    const schema = `cli_${randomBytes(5).toString('hex')}`;
    const env = { DATABASE_URL: database().url, CAIRN_SCHEMA: schema, CAIRN_POLL_MS: '50' };
    const early = run([pgFixture], env);
    expect((await early.exited).code).toBe(1);
    expect(early.stderr).toContain('SCHEMA_MISMATCH');
    expect(early.stderr).toContain(`cairn-worker migrate ${pgFixture}`);

    const migrating = run(['migrate', pgFixture], env);
    expect(await migrating.exited).toEqual({ code: 0, signal: null });
    expect(migrating.stdout).toContain('the store is migrated');

    const sql = postgres(database().url, { max: 1, onnotice: () => undefined });
    try {
      const [{ version }] = await sql<[{ version: number }]>`
        select max(version)::int as version from ${sql(schema)}.schema_migrations`;
      expect(version).toBeGreaterThan(0);
      const worker = run([pgFixture], env);
      await worker.waitFor((line) => line.type === 'started');
      worker.kill('SIGTERM');
      expect((await worker.exited).code).toBe(0);
      // The module ended its pool, the command the store's own connections: nothing held the process open.
      expect(worker.stderr).toBe('');
    } finally {
      await sql.unsafe(`drop schema if exists "${schema}" cascade`);
      await sql.end({ timeout: 5 });
    }
  });
});
