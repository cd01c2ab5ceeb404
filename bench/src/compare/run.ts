import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, type TestDatabase } from '@cairn/testing';
import { checkOut, describeCommit, hasChanges, type OtherCheckout } from './checkout.js';
import { compareReports } from './combine.js';
import { dropLeftoverDatabases } from './leftover-databases.js';
import type { CompareReport } from './report.js';
import { runSide, type SideResult } from './side.js';

/** Options of `runCompare`. */
export interface CompareOptions {
  /** The other side: any name git takes for a commit (`main`, `HEAD`, a hash). */
  ref: string;
  /** Rounds of this side then the other. */
  rounds: number;
  quick: boolean;
  /** Only these rows (by key). @defaultValue every row of either side */
  only?: readonly string[];
  log?(message: string): void;
}

/** Raised when SIGINT or SIGTERM stopped a comparison; the worktree and the database are gone by then. */
export class CompareInterruptedError extends Error {
  constructor(signal: string) {
    super(`compare: stopped by ${signal}`);
    this.name = 'CompareInterruptedError';
  }
}

// This file is bench/src/compare/run.ts: the checkout it belongs to is three levels up.
const thisRoot = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * Compares this checkout's work tree with another commit: checks the commit out in a temporary worktree with
 * its own dependencies, then runs the chosen rows of both benches as child processes, this side then the other
 * in each round, never two at once, on one Postgres server (each bench in a database of its own). The worktree
 * and the server's database for the comparison are removed at the end, also after a failure or a signal.
 */
export async function runCompare(options: CompareOptions): Promise<CompareReport> {
  const log = options.log ?? ((message: string) => process.stderr.write(`${message}\n`));
  const startedAt = new Date().toISOString();
  const other = await describeCommit(thisRoot, options.ref);
  const here = await describeCommit(thisRoot, 'HEAD');
  const changes = await hasChanges(thisRoot);
  const names = { this: 'this', other: options.ref } as const;
  const controller = new AbortController();
  let stoppedBy: string | undefined;
  // Handling the signal keeps this process alive until the running bench has exited and the cleanup is done.
  // A Ctrl-C reaches this process twice (from the terminal and relayed by tsx's CLI): the first one counts.
  const onSignal = (signal: NodeJS.Signals) => {
    if (stoppedBy !== undefined) return;
    stoppedBy = signal;
    log(`compare: ${signal}: stopping the bench, then removing the temporary worktree`);
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let checkout: OtherCheckout | undefined;
  let database: TestDatabase | undefined;
  try {
    checkout = await checkOut({ repo: thisRoot, commit: other.commit, log });
    // Both benches read DATABASE_URL: pointing them at one database of this server makes them create their
    // own databases beside it, on the same server even when it is an embedded one started here.
    database = await createTestDatabase({ prefix: 'cairn_bench_compare' });
    const args = [
      ...(options.quick ? ['--quick'] : []),
      ...(options.only === undefined ? [] : ['--only', options.only.join(',')]),
    ];
    const results: Record<'this' | 'other', SideResult[]> = { this: [], other: [] };
    for (let round = 1; round <= options.rounds; round += 1) {
      for (const side of ['this', 'other'] as const) {
        if (controller.signal.aborted) break;
        log(`compare: round ${round} of ${options.rounds}: ${names[side]}`);
        const result = await runSide({
          root: side === 'this' ? thisRoot : checkout.root,
          tag: `[${names[side]} ${round}]`,
          args,
          out: join(checkout.scratch, `${side}-${round}.json`),
          env: { DATABASE_URL: database.url },
          signal: controller.signal,
        });
        results[side].push(result);
        if (result.signal !== null)
          for (const name of await dropLeftoverDatabases(database.url, result.pid))
            log(
              `compare: dropped ${name}, left by the ${names[side]} bench killed by ${result.signal}`,
            );
      }
    }
    if (stoppedBy !== undefined) throw new CompareInterruptedError(stoppedBy);
    const reports = {
      this: results.this.map((result) => result.report),
      other: results.other.map((result) => result.report),
    };
    const failures = (side: 'this' | 'other') =>
      results[side].flatMap((result, round) => {
        if (result.failure !== undefined) return [`round ${round + 1}: ${result.failure}`];
        if (result.code !== 0)
          return [`round ${round + 1}: its bench exited with code ${result.code}: a row failed`];
        return [];
      });
    const environment = (side: 'this' | 'other') => reports[side].find((r) => r)?.environment;
    const version = environment('this')?.postgres ?? environment('other')?.postgres;
    return {
      startedAt,
      quick: options.quick,
      rounds: options.rounds,
      postgres: `the ${database.source} Postgres server${version === undefined ? '' : ` ${version}`}`,
      this: {
        name: names.this,
        commit: here.commit,
        changes,
        failures: failures('this'),
        ...optional('environment', environment('this')),
      },
      other: {
        name: names.other,
        commit: other.commit,
        failures: failures('other'),
        ...optional('environment', environment('other')),
      },
      rows: compareReports(reports, { names, ...optional('only', options.only) }),
    };
  } catch (error) {
    // A Ctrl-C also reaches git and pnpm, which then fail: the signal is the reason, not their failure.
    if (stoppedBy !== undefined && !(error instanceof CompareInterruptedError))
      throw new CompareInterruptedError(stoppedBy);
    throw error;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await database
      ?.drop()
      .catch((error: unknown) => log(`compare: dropping its database: ${String(error)}`));
    await checkout?.remove();
  }
}

/** `{ [key]: value }`, or nothing when the value is undefined (exactOptionalPropertyTypes). */
function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
