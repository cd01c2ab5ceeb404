import type { AnySql } from '../db.js';

/**
 * Creates the keyring's schema and table if they are missing: a row per subject, its key until it is forgotten
 * (then only the SHA-256 of its id and when it was forgotten), found by subject hash or by key id. In a
 * transaction holding an advisory lock named after the table, so processes migrating at once wait for each other
 * (two `CREATE SCHEMA IF NOT EXISTS` at once can both try to create it).
 */
export async function keyringMigrate(sql: AnySql, schema: string, table: string): Promise<void> {
  await sql.begin(async (tx) => {
    await tx.unsafe('SELECT pg_advisory_xact_lock(hashtext($1::text))', [table]);
    await tx.unsafe(
      `CREATE SCHEMA IF NOT EXISTS ${schema};
       CREATE TABLE IF NOT EXISTS ${table} (
         subject_hash text PRIMARY KEY,
         key_id text UNIQUE,
         key bytea,
         made_at timestamptz NOT NULL DEFAULT now(),
         forgotten_at timestamptz,
         CHECK ((key_id IS NULL) = (key IS NULL)),
         CHECK (key IS NULL OR octet_length(key) = 32)
       )`,
    );
  });
}
