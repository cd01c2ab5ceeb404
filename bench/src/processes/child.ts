import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

// tsx as a loader, not its CLI: the CLI runs the script in a grandchild, which signals would not reach.
const tsxLoader = createRequire(import.meta.url).resolve('tsx/esm');

/** One JSON line a child printed. */
export type Line = Record<string, unknown> & { kind: string };

/** A TypeScript script of this folder running in a child Node process, and every JSON line it printed. */
export class ChildScript {
  readonly lines: Line[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;
  private readonly waiters = new Set<() => void>();
  private stderr = '';

  constructor(script: string, env: Record<string, string>, nodeArgs: readonly string[] = []) {
    const path = fileURLToPath(new URL(`./${script}`, import.meta.url));
    this.child = spawn(
      process.execPath,
      [...nodeArgs, '--no-deprecation', '--import', tsxLoader, '--conditions=@cairn/source', path],
      { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-4_000);
    });
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

  /** The last few kilobytes the child wrote to stderr. */
  get errorOutput(): string {
    return this.stderr.trim();
  }

  kill(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** Resolves with the first line matching `predicate`; rejects when the child exits first or after `timeoutMs`. */
  waitFor(predicate: (line: Line) => boolean, timeoutMs = 120_000): Promise<Line> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for a line`));
      }, timeoutMs);
      const check = () => {
        const found = this.lines.find(predicate);
        if (found !== undefined) {
          clearTimeout(timer);
          this.waiters.delete(check);
          resolve(found);
        } else if (this.child.exitCode !== null || this.child.signalCode !== null) {
          clearTimeout(timer);
          this.waiters.delete(check);
          reject(
            new Error(
              `the child exited (${this.child.exitCode ?? this.child.signalCode}) before printing the awaited line: ${this.errorOutput.split('\n').slice(-5).join(' | ')}`,
            ),
          );
        }
      };
      this.waiters.add(check);
      check();
    });
  }
}
