import type { Sql } from 'postgres';
import { sleep } from './stats.js';

/** What the server had counted at one moment: commits of one database, WAL position, next transaction id. */
export interface Counters {
  xactCommit: number;
  walLsn: string;
  nextXid: number;
}

/** What a workload cost the server between two readings. */
export interface Cost {
  /** `pg_stat_database.xact_commit` delta: every committed transaction, read-only ones included. */
  commits: number;
  /** Transaction ids assigned: transactions that wrote (server-wide). */
  writeXacts: number;
  /** `pg_current_wal_lsn()` difference (server-wide). */
  walBytes: number;
}

/**
 * Reads the counters of `database` through `admin`, a connection to any database of the server. Backends
 * report their commit counts to the statistics system when they go idle (at most once a second) or exit, so
 * read only after the workload's connections are closed: `waitForBackendsToExit` first.
 */
export async function readCounters(admin: Sql, database: string): Promise<Counters> {
  const [row] = await admin.unsafe<Array<{ commits: string; lsn: string; xid: string }>>(
    `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = $1)::text AS commits,
            pg_current_wal_lsn()::text AS lsn,
            pg_snapshot_xmax(pg_current_snapshot())::text AS xid`,
    [database],
  );
  return { xactCommit: Number(row!.commits), walLsn: row!.lsn, nextXid: Number(row!.xid) };
}

/** The cost between two readings. */
export async function costBetween(admin: Sql, before: Counters, after: Counters): Promise<Cost> {
  const [row] = await admin.unsafe<Array<{ bytes: string }>>(
    'SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::text AS bytes',
    [after.walLsn, before.walLsn],
  );
  return {
    commits: after.xactCommit - before.xactCommit,
    writeXacts: after.nextXid - before.nextXid,
    walBytes: Number(row!.bytes),
  };
}

/**
 * Waits until no backend other than `admin`'s own is connected to `database`, so every closed connection
 * has flushed its statistics (a backend does so before it leaves pg_stat_activity). Gives up after 15 s.
 */
export async function waitForBackendsToExit(admin: Sql, database: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const [row] = await admin.unsafe<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
      [database],
    );
    if (row!.n === 0) return;
    await sleep(50);
  }
}
