import { randomBytes } from 'node:crypto';
import { pgStore, type PgStore, type PgStoreOptions } from '@cairn/store-pg';
import type { TestDatabase } from '@cairn/testing';
import postgres, { type Sql } from 'postgres';

/** A fresh migrated schema in the file's database, and every store opened on it. */
export interface PgHarness {
  sql: Sql;
  schema: string;
  store(options?: Partial<PgStoreOptions>): PgStore;
  close(): Promise<void>;
}

/** Opens a pool on the file's database; end it in afterAll. */
export function connect(
  database: TestDatabase,
  options: postgres.Options<Record<string, never>> = {},
): Sql {
  return postgres(database.url, { max: 10, onnotice: () => undefined, ...options });
}

/** Creates and migrates a uniquely named schema; `close` ends the stores and drops the schema. */
export async function createPgHarness(sql: Sql): Promise<PgHarness> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const stores: PgStore[] = [];
  const open = (options: Partial<PgStoreOptions> = {}) => {
    const store = pgStore({ sql, schema, ...options });
    stores.push(store);
    return store;
  };
  await open().migrate();
  return {
    sql,
    schema,
    store: open,
    async close() {
      await Promise.all(stores.map((store) => store.close()));
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    },
  };
}

/** Waits `ms` of wall time: for leases, the database's clock decides. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The advisory locks of this database still held by any backend. */
export async function advisoryLocks(sql: Sql): Promise<number> {
  const rows = await sql<{ n: number }[]>`
    select count(*)::int as n from pg_locks
     where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())`;
  return rows[0]!.n;
}
