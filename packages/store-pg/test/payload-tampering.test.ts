import { describePayloadTampering, useTestDatabase } from '@cairn/testing';
import type { Sql } from 'postgres';
import { afterAll, beforeAll } from 'vitest';
import { connect, createPgHarness, sleep } from './support.js';

// Encoded payloads moved or replaced in Postgres's rows (through store-pg's own writes) are refused.
const database = useTestDatabase({ prefix: 'cairn_tamper' });
let sql: Sql;
beforeAll(() => {
  sql = connect(database());
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

describePayloadTampering('pgStore: payloads moved or replaced', async () => {
  const harness = await createPgHarness(sql);
  const shortTtlMs = 300;
  return {
    store: () => harness.store(),
    shortTtlMs,
    expireLeases: () => sleep(shortTtlMs + 100),
    close: () => harness.close(),
  };
});
