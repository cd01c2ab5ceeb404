/**
 * `cairn runs reencrypt` moves runs a codec encrypted under one key to the key it writes with now, so the old key
 * can be retired; `cairn runs forget` deletes a run (or a subject's keys and runs). Both need the codec.
 */
import { fileURLToPath } from 'node:url';
import { protectPayloads } from '@cairn/sdk';
import { pgStore, type PgStore } from '@cairn/store-pg';
import { useTestDatabase } from '@cairn/testing';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codec } from './fixtures/codec-module.js';
import { markers, seedEncryptedRuns, type EncryptedRuns } from './fixtures/encrypted-runs.js';
import { cairn, json } from './support.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const rotated = ['--codec', fixture('rotated-codec-module.ts')];
const newKeyOnly = ['--codec', fixture('new-key-codec-module.ts')];

const database = useTestDatabase({ prefix: 'cairn_cli_rekey' });

describe('cairn runs reencrypt and runs forget', () => {
  let sql: postgres.Sql;
  let raw: PgStore;
  let ids: EncryptedRuns;
  let env: Record<string, string>;

  beforeAll(async () => {
    const { url } = database();
    sql = postgres(url, { max: 4, onnotice: () => undefined });
    raw = pgStore({ sql, schema: 'rekey' });
    await raw.migrate();
    ids = await seedEncryptedRuns(protectPayloads(raw, { codec }));
    env = { DATABASE_URL: url, CAIRN_SCHEMA: 'rekey' };
  }, 120_000);
  afterAll(async () => {
    await raw?.close();
    await sql?.end({ timeout: 5 });
  });

  it('moves every run to the new key: with the old key retired, each reads as before', async () => {
    const before = await cairn(['runs', 'show', ids.completed, '--json', ...newKeyOnly], env);
    expect(before.code).toBe(1);
    expect(before.stderr).toContain('PAYLOAD_UNREADABLE');

    const moved = await cairn(['runs', 'reencrypt', '--json', ...rotated], env);
    expect([moved.code, moved.stderr]).toEqual([0, '']);
    expect(json(moved.stdout)).toMatchObject({
      runs: 3,
      rewritten: 3,
      raced: 0,
      unreadable: [],
      complete: true,
    });
    for (const runId of Object.values(ids)) {
      const rows = JSON.stringify([await raw.load(runId), await raw.signalPayloads(runId)]);
      expect(rows).not.toContain('@k1:');
    }

    const shown = await cairn(['runs', 'show', ids.completed, '--json', ...newKeyOnly], env);
    expect(shown.code).toBe(0);
    expect(json<{ run: Record<string, unknown> }>(shown.stdout).run).toMatchObject({
      status: 'completed',
      input: markers.input,
    });
    const waiting = await cairn(['runs', 'show', ids.waiting, '--json', ...newKeyOnly], env);
    expect(waiting.code).toBe(0);

    const again = await cairn(['runs', 'reencrypt', ...newKeyOnly], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('Re-encrypted 3 runs: 0 had payloads under another key');
  });

  it('refuses both without the codec (exit 2), and forgets one run with it', async () => {
    const plain = await cairn(['runs', 'reencrypt'], env);
    expect(plain.code).toBe(2);
    expect(plain.stderr).toContain('--codec');
    expect((await cairn(['runs', 'forget'], env)).code).toBe(2);

    const forgot = await cairn(['runs', 'forget', '--run', ids.failed, '--json', ...rotated], env);
    expect(forgot.code).toBe(0);
    expect(json(forgot.stdout)).toEqual({
      deleted: [ids.failed],
      remaining: [],
      keysDeleted: false,
    });
    expect(await raw.load(ids.failed)).toBeUndefined();
    expect(await raw.load(ids.completed)).toBeDefined();
  });
});
