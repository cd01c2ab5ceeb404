import { randomBytes } from 'node:crypto';
import { aesGcmCodec, deflateCodec, protectPayloads, type DurableStore } from '@cairn/sdk';
import type { PgStore } from '@cairn/store-pg';
import { describeStoreConformance, useTestDatabase } from '@cairn/testing';
import type { Sql } from 'postgres';
import { afterAll, beforeAll } from 'vitest';
import { connect, createPgHarness, namedLockConnection, sleep } from './support.js';

// The store contract holds with every payload encoded (deflate, then AES-GCM): store-pg reads nothing it
// needs out of a payload, and writes a conversation's new elements only, as encoded strings.
const database = useTestDatabase({ prefix: 'cairn_protected' });
let sql: Sql;
beforeAll(() => {
  sql = connect(database());
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

describeStoreConformance('pgStore behind protectPayloads', async () => {
  const harness = await createPgHarness(sql);
  const codec = [deflateCodec(), aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' })];
  const shortTtlMs = 300;
  const raw = new Map<DurableStore, { store: PgStore; lockName: string }>();
  return {
    store: () => {
      const lockName = `${harness.schema}-${raw.size}`;
      const store = harness.store({
        lockConnection: namedLockConnection(database().url, lockName),
      });
      const protectedStore = protectPayloads(store, { codec });
      raw.set(protectedStore, { store, lockName });
      return protectedStore;
    },
    shortTtlMs,
    async blip(store) {
      await sql`select pg_terminate_backend(pid, 5000) from pg_stat_activity
                 where application_name = ${raw.get(store)!.lockName}`;
    },
    expireLeases: () => sleep(shortTtlMs + 100),
    crash: (store) => raw.get(store)!.store.close(),
    close: () => harness.close(),
  };
});
