import { randomBytes } from 'node:crypto';
import type { Fence, Lease } from '@cairn/sdk';
import { pgStore, type PgStore, type PgStoreOptions } from '@cairn/store-pg';
import { useTestDatabase, type TestDatabase } from '@cairn/testing';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
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

/**
 * The options of a store's own liveness connection to the database at `url`, named `name` (its
 * `application_name`), so a test can find that one connection's backend and end it.
 */
export function namedLockConnection(
  url: string,
  name: string,
): postgres.Options<Record<string, never>> {
  const parsed = new URL(url);
  return {
    host: parsed.hostname,
    port: Number(parsed.port || 5432),
    database: parsed.pathname.slice(1),
    user: decodeURIComponent(parsed.username),
    ...(parsed.password === '' ? {} : { pass: decodeURIComponent(parsed.password) }),
    connection: { application_name: name },
  };
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

/** A child `<root>-child` of the held root `root`, created and adopted under the root's lease. */
export async function childOf(store: PgStore, root: Lease): Promise<Fence> {
  await store.create({
    runId: `${root.runId}-child`,
    kind: 'agent',
    name: 'n',
    signature: 's',
    snapshot: null,
    parent: { runId: root.runId, incarnation: root.incarnation },
  });
  return (await store.adopt(`${root.runId}-child`, root))!;
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

/** Gives a test file its own database and a migrated schema in it, opened before and closed after its tests. */
export function usePgHarness(prefix: string): () => { sql: Sql; harness: PgHarness } {
  const database = useTestDatabase({ prefix });
  let opened: { sql: Sql; harness: PgHarness } | undefined;
  beforeAll(async () => {
    const sql = connect(database());
    opened = { sql, harness: await createPgHarness(sql) };
  });
  afterAll(async () => {
    await opened?.harness.close();
    await opened?.sql.end({ timeout: 5 });
  });
  return () => {
    if (opened === undefined) throw new Error('The harness is used outside a test.');
    return opened;
  };
}

/** A `sql` that shows every statement it runs (text and parameters) to `watch`, then runs it. */
export function watchedSql(
  inner: Sql,
  watch: (text: string, params: readonly unknown[]) => void,
): Sql {
  return new Proxy(inner, {
    get(target, key, receiver) {
      if (key === 'unsafe') {
        return (text: string, params: unknown[] = []) => {
          watch(text, params);
          return target.unsafe(text, params as never[]);
        };
      }
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
}

/** Gives a test file its own database and each of its tests a fresh migrated schema, dropped after it. */
export function usePgHarnessPerTest(prefix: string): {
  database(): TestDatabase;
  sql(): Sql;
  harness(): PgHarness;
} {
  const database = useTestDatabase({ prefix });
  let sql: Sql | undefined;
  let harness: PgHarness | undefined;
  beforeAll(() => {
    sql = connect(database());
  });
  afterAll(async () => {
    await sql?.end({ timeout: 5 });
  });
  beforeEach(async () => {
    harness = await createPgHarness(sql!);
  });
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });
  return {
    database,
    sql: () => sql!,
    harness: () => {
      if (harness === undefined) throw new Error('The harness is used outside a test.');
      return harness;
    },
  };
}
