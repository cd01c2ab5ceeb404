import { useTestDatabase } from '@cairn/testing';
import type { Sql } from 'postgres';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connect, createPgHarness, type PgHarness } from './support.js';

const database = useTestDatabase({ prefix: 'cairn_list_order' });
let sql: Sql;
let harness: PgHarness;
beforeAll(() => {
  sql = connect(database());
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});
beforeEach(async () => {
  harness = await createPgHarness(sql);
});
afterEach(async () => {
  await harness.close();
});

describe('listing runs', () => {
  it('lists in the order the runs were created, by number, across a power of ten', async () => {
    // Creation numbers 95 to 106: in text order, 100 to 106 would come before 95.
    await sql.unsafe(
      `ALTER TABLE "${harness.schema}".runs ALTER COLUMN created_seq RESTART WITH 95`,
    );
    const store = harness.store();
    const ids = Array.from({ length: 12 }, (_, i) => `ticket-${String(i).padStart(2, '0')}`);
    for (const runId of ids) {
      await store.create({ runId, kind: 'agent', name: 'support', signature: 's', snapshot: null });
    }
    expect((await store.list({})).map((run) => run.runId)).toEqual(ids);
    expect((await store.list({ limit: 5 })).map((run) => run.runId)).toEqual(ids.slice(0, 5));
  });
});
