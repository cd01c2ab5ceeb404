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
      { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    // A child that exited closes its stdin: a line sent then is lost, not an error of the bench.
    this.child.stdin!.on('error', () => undefined);
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

  /** What the child said when it failed: the first error line it wrote to stderr, else its last lines. */
  private failure(): string {
    const lines = this.errorOutput.split('\n');
    return (
      lines.find((line) => /^\s*(\w*Error|Error)\b[:[]/.test(line))?.trim() ??
      lines.slice(-5).join(' | ')
    );
  }

  /** Writes one JSON line to the child's stdin. */
  send(line: object): void {
    this.child.stdin!.write(`${JSON.stringify(line)}\n`);
  }

  /** Resolves with the first line matching `predicate`; rejects when the child exits first or after `timeoutMs`. */
  async waitFor(predicate: (line: Line) => boolean, timeoutMs = 120_000): Promise<Line> {
    let found: Line | undefined;
    await this.waitUntil(() => (found = this.lines.find(predicate)) !== undefined, timeoutMs);
    return found!;
  }

  /**
   * Resolves once `condition` holds, checked now and after every line; rejects when the child exits first
   * or after `timeoutMs`.
   */
  waitUntil(condition: () => boolean, timeoutMs = 120_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for a line`));
      }, timeoutMs);
      const check = () => {
        if (condition()) {
          clearTimeout(timer);
          this.waiters.delete(check);
          resolve();
        } else if (this.child.exitCode !== null || this.child.signalCode !== null) {
          clearTimeout(timer);
          this.waiters.delete(check);
          reject(
            new Error(
              `the child exited (${this.child.exitCode ?? this.child.signalCode}) before printing the awaited line: ${this.failure()}`,
            ),
          );
        }
      };
      this.waiters.add(check);
      check();
    });
  }
}
