import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ChildScript } from './child.js';

/** What one DBOS measure gave: times, and what the server wrote meanwhile (server-wide). */
export interface DbosResult {
  elapsed: number;
  stepTimes: number[];
  walBytes: number;
  writeXacts: number;
}

/** A warm DBOS process (dbos-run.ts) that runs workflows on request. */
export interface DbosProcess {
  run(mode: 'sequential' | 'concurrent', workflows: number): Promise<DbosResult>;
  close(): Promise<void>;
}

/**
 * Launches DBOS Transact in a child process on the system database at `url` (migrated by its first launch)
 * and waits until it has warmed up. Rejects with the end of its stderr when it cannot start.
 */
export async function startDbos(options: {
  url: string;
  steps: number;
  poolSize: number;
}): Promise<DbosProcess> {
  const child = new ChildScript('dbos-run.ts', {
    DBOS_SYSTEM_DATABASE_URL: options.url,
    STEPS: String(options.steps),
    POOL_SIZE: String(options.poolSize),
  });
  try {
    await child.waitFor((line) => line.kind === 'ready', 180_000);
  } catch (error) {
    child.kill('SIGKILL');
    await child.exited;
    throw error;
  }
  let next = 0;
  return {
    async run(mode, workflows) {
      const id = (next += 1);
      child.send({ mode, workflows, id });
      const result = await child.waitFor((l) => l.kind === 'result' && l.id === id, 900_000);
      return {
        elapsed: result.elapsed as number,
        stepTimes: result.stepTimes as number[],
        walBytes: result.walBytes as number,
        writeXacts: result.writeXacts as number,
      };
    },
    async close() {
      child.send({ mode: 'exit' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await child.exited;
      clearTimeout(timer);
    },
  };
}

/** The installed DBOS version, read from its package.json next to its entry point. */
export function dbosVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@dbos-inc/dbos-sdk');
  const manifest = JSON.parse(readFileSync(join(dirname(entry), '../../package.json'), 'utf8')) as {
    version: string;
  };
  return manifest.version;
}
