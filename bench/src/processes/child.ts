import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { LineProcess } from '@cairn/testing';

// tsx as a loader, not its CLI: the CLI runs the script in a grandchild, which signals would not reach.
const tsxLoader = createRequire(import.meta.url).resolve('tsx/esm');

/** One JSON line a child printed. */
export type Line = Record<string, unknown> & { kind: string };

/** A TypeScript script of this folder running in a child Node process, and every JSON line it printed. */
export class ChildScript extends LineProcess<Line> {
  constructor(script: string, env: Record<string, string>, nodeArgs: readonly string[] = []) {
    const path = fileURLToPath(new URL(`./${script}`, import.meta.url));
    super(
      [...nodeArgs, '--no-deprecation', '--import', tsxLoader, '--conditions=@cairn/source', path],
      env,
      { stdin: true, captureStderr: true },
    );
  }

  /** Resolves with the first line matching `predicate`; rejects when the child exits first or after `timeoutMs`. */
  override waitFor(predicate: (line: Line) => boolean, timeoutMs = 120_000): Promise<Line> {
    return super.waitFor(predicate, timeoutMs);
  }

  /** Resolves once `condition` holds; rejects when the child exits first or after `timeoutMs`. */
  override waitUntil(condition: () => boolean, timeoutMs = 120_000): Promise<void> {
    return super.waitUntil(condition, timeoutMs);
  }
}
