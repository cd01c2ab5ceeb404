import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** One JSON line a process printed. */
export interface PrintedLine {
  kind: string;
  [key: string]: unknown;
}

/** How a `LineProcess` is started. */
export interface LineProcessOptions {
  /** Keep a pipe to its stdin, for `send`. @defaultValue false (stdin is ignored) */
  stdin?: boolean;
  /**
   * Keep the last few kilobytes of its stderr (`errorOutput`, and the reason a wait fails) instead of passing it
   * through to this process's stderr. @defaultValue false
   */
  captureStderr?: boolean;
}

/**
 * A Node process (a worker, say) that prints one JSON object per line on stdout, and everything it printed:
 * what process-level tests and benchmarks read to know what happened in it, up to a SIGKILL.
 */
export class LineProcess<Line extends PrintedLine = PrintedLine> {
  readonly lines: Line[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;
  private readonly waiters = new Set<() => void>();
  private stderr = '';

  /** Runs `node ...args` with `env` added to this process's environment. */
  constructor(
    args: readonly string[],
    env: Record<string, string>,
    options: LineProcessOptions = {},
  ) {
    this.child = spawn(process.execPath, args, {
      env: { ...process.env, ...env },
      stdio: [
        options.stdin === true ? 'pipe' : 'ignore',
        'pipe',
        options.captureStderr === true ? 'pipe' : 'inherit',
      ],
    });
    // A process that exited closes its stdin: a line sent then is lost, not an error of the caller.
    this.child.stdin?.on('error', () => undefined);
    this.child.stderr?.on('data', (chunk: Buffer) => {
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

  /** The last few kilobytes it wrote to stderr, when started with `captureStderr`. */
  get errorOutput(): string {
    return this.stderr.trim();
  }

  kill(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** Writes one JSON line to its stdin (started with `stdin: true`). */
  send(line: object): void {
    this.child.stdin?.write(`${JSON.stringify(line)}\n`);
  }

  /** The lines of this kind (and type, when given), in the order printed. */
  linesOf(kind: string, type?: string): Line[] {
    return this.lines.filter(
      (line) => line.kind === kind && (type === undefined || line.type === type),
    );
  }

  /** Resolves with the first line matching `predicate`; rejects when it exits first or after `timeoutMs`. */
  async waitFor(predicate: (line: Line) => boolean, timeoutMs?: number): Promise<Line> {
    let found: Line | undefined;
    await this.waitUntil(() => (found = this.lines.find(predicate)) !== undefined, timeoutMs);
    return found!;
  }

  /**
   * Resolves once `condition` holds, checked now and after every line; rejects when the process exits first,
   * or after `timeoutMs` (without it, the caller's test timeout bounds the wait).
   */
  waitUntil(condition: () => boolean, timeoutMs?: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
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
              `the process exited (${this.child.exitCode ?? this.child.signalCode}) before printing the awaited line${this.failure()}`,
            ),
          );
        }
      };
      this.waiters.add(check);
      check();
    });
  }

  /** What it said when it failed: the first error line it wrote to stderr, else its last lines. */
  private failure(): string {
    if (this.errorOutput === '') return '';
    const lines = this.errorOutput.split('\n');
    const said =
      lines.find((line) => /^\s*(\w*Error|Error)\b[:[]/.test(line))?.trim() ??
      lines.slice(-5).join(' | ');
    return `: ${said}`;
  }
}
