import { describeStoreConformance, useTestDatabase } from '@cairn/testing';
import { afterAll, beforeAll } from 'vitest';
import type { Sql } from 'postgres';
import type { PgStore } from '@cairn/store-pg';
import { connect, createPgHarness, namedLockConnection, sleep } from './support.js';

const database = useTestDatabase({ prefix: 'cairn_conformance' });
let sql: Sql;
beforeAll(() => {
  sql = connect(database());
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

describeStoreConformance('pgStore', async () => {
  const harness = await createPgHarness(sql);
  const shortTtlMs = 300;
  // Each store's lock connection is named, so a test can cut just that one (a blip).
  const lockNames = new Map<unknown, string>();
  return {
    store: () => {
      const name = `${harness.schema}-${lockNames.size}`;
      const store = harness.store({ lockConnection: namedLockConnection(database().url, name) });
      lockNames.set(store, name);
      return store;
    },
    shortTtlMs,
    async blip(store) {
      await sql`select pg_terminate_backend(pid, 5000) from pg_stat_activity
                 where application_name = ${lockNames.get(store)!}`;
    },
    // The database clock decides when a lease runs out: wait past it.
    expireLeases: () => sleep(shortTtlMs + 100),
    // A dead process's lock connection ends without any release.
    crash: (store) => (store as PgStore).close(),
    close: () => harness.close(),
  };
});
