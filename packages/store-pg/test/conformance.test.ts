import { describeStoreConformance, useTestDatabase } from '@cairn/testing';
import { afterAll, beforeAll } from 'vitest';
import type { Sql } from 'postgres';
import type { PgStore } from '@cairn/store-pg';
import { connect, createPgHarness, sleep } from './support.js';

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
  return {
    store: () => harness.store(),
    shortTtlMs,
    // The database clock decides when a lease runs out: wait past it.
    expireLeases: () => sleep(shortTtlMs + 100),
    // A dead process's lock connection ends without any release.
    crash: (store) => (store as PgStore).close(),
    close: () => harness.close(),
  };
});
