import { randomBytes } from 'node:crypto';
import { pgKeyring } from '@cairn/store-pg';
import { describeKeyringConformance, useTestDatabase } from '@cairn/testing';
import type { Sql } from 'postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connect } from './support.js';

const database = useTestDatabase({ prefix: 'cairn_keyring' });
const pools: Sql[] = [];
beforeAll(() => {
  pools.push(connect(database()));
});
afterAll(async () => {
  for (const pool of pools) await pool.end({ timeout: 5 });
});

// Each "process" is a keyring on a pool of its own; every test has a schema of its own.
describeKeyringConformance('pgKeyring', async () => {
  const schema = `keys_${randomBytes(4).toString('hex')}`;
  const opened: Sql[] = [];
  let migrated = false;
  return {
    async keyring() {
      const sql = connect(database(), { max: 4 });
      opened.push(sql);
      const keyring = pgKeyring({ sql, schema });
      if (!migrated) {
        await keyring.migrate();
        migrated = true;
      }
      return keyring;
    },
    async close() {
      await pools[0]!.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      for (const sql of opened) await sql.end({ timeout: 5 });
    },
  };
});

it('says to migrate when its table is missing, and migrates from every process at once', async () => {
  const schema = `keys_${randomBytes(4).toString('hex')}`;
  const keyring = pgKeyring({ sql: pools[0]!, schema });
  await expect(keyring.current('user-1')).rejects.toMatchObject({
    code: 'SCHEMA_MISMATCH',
    message: expect.stringContaining('.migrate()'),
  });
  await Promise.all(Array.from({ length: 4 }, () => keyring.migrate()));
  expect((await keyring.current('user-1')).key).toHaveLength(32);
  await pools[0]!.unsafe(`DROP SCHEMA ${schema} CASCADE`);
});

it('keeps nothing of a forgotten subject but the hash of its id', async () => {
  const schema = `keys_${randomBytes(4).toString('hex')}`;
  const keyring = pgKeyring({ sql: pools[0]!, schema });
  await keyring.migrate();
  await keyring.current('alice@example.com');
  await keyring.forget('alice@example.com');
  const rows = await pools[0]!.unsafe(`SELECT * FROM ${schema}.subject_keys`);
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({ key_id: null, key: null });
  expect(JSON.stringify(rows)).not.toContain('alice');
  // A key that is not 32 bytes cannot be stored, so none is ever handed to the cipher.
  const { id } = await keyring.current('bob');
  await expect(
    pools[0]!.unsafe(`UPDATE ${schema}.subject_keys SET key = '\\x00' WHERE key_id = $1`, [id]),
  ).rejects.toThrow(/check constraint/);
  await pools[0]!.unsafe(`DROP SCHEMA ${schema} CASCADE`);
});
