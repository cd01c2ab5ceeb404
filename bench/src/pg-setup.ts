import { randomBytes } from 'node:crypto';
import { pgStore, type PgStore } from '@cairn/store-pg';
import postgres, { type Sql } from 'postgres';
import type { BenchContext } from './context.js';

/** A fresh schema name for one row. */
export function freshSchema(prefix: string): string {
  return `${prefix}_${randomBytes(4).toString('hex')}`;
}

/** Creates and migrates `schema` through a short-lived connection. */
export async function migrateSchema(ctx: BenchContext, schema: string): Promise<void> {
  const sql = postgres(ctx.url, { max: 1, onnotice: () => undefined });
  const store = pgStore({ sql, schema });
  try {
    await store.migrate();
  } finally {
    await store.close();
    await sql.end({ timeout: 5 });
  }
}

/** A `postgres()` client and a store on `schema`; `close` ends both. */
export function openStore(
  ctx: BenchContext,
  schema: string,
  max: number,
): { sql: Sql; store: PgStore; close(): Promise<void> } {
  const sql = postgres(ctx.url, { max, onnotice: () => undefined });
  const store = pgStore({ sql, schema });
  return {
    sql,
    store,
    async close() {
      await store.close();
      await sql.end({ timeout: 5 });
    },
  };
}

/** Drops a row's schema. */
export async function dropSchema(ctx: BenchContext, schema: string): Promise<void> {
  await ctx.admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}
