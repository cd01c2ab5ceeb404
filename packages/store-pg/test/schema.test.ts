import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { CairnError } from '@cairn/sdk';
import { migrationSql, pgStore } from '@cairn/store-pg';
import { useTestDatabase } from '@cairn/testing';
import postgres, { type Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from './support.js';

const database = useTestDatabase({ prefix: 'cairn_schema' });
let sql: Sql;
beforeAll(() => {
  sql = connect(database());
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

const fresh = () => `s_${randomBytes(6).toString('hex')}`;

/** A new schema brought to `version` by the package's own migration files, as that release left it. */
async function schemaAt(version: number): Promise<{ schema: string; quoted: string }> {
  const schema = fresh();
  const folder = new URL('../sql/', import.meta.url);
  const quoted = `"${schema}"`;
  await sql.unsafe(`CREATE SCHEMA ${quoted}`);
  await sql.unsafe(
    `CREATE TABLE ${quoted}.schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
       applied_at timestamptz NOT NULL DEFAULT now())`,
  );
  for (const file of readdirSync(folder)
    .filter((f) => /^\d{6}_/.test(f) && Number(f.slice(0, 6)) <= version)
    .sort()) {
    const text = readFileSync(new URL(file, folder), 'utf8')
      .replaceAll('{{schema}}', quoted)
      .replaceAll('{{channel}}', `'${schema}_work'`);
    await sql.unsafe(text).simple();
    await sql.unsafe(`INSERT INTO ${quoted}.schema_migrations VALUES ($1, $2)`, [
      Number(file.slice(0, 6)),
      file.slice(7, -4),
    ]);
  }
  return { schema, quoted };
}

describe('migrations', () => {
  it('never migrates by itself: a missing schema fails with SCHEMA_MISMATCH that says what to run', async () => {
    const schema = fresh();
    const store = pgStore({ sql, schema });
    const error = await store.load('r').catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(CairnError);
    expect(error).toMatchObject({ code: 'SCHEMA_MISMATCH', retryable: false });
    expect((error as CairnError).data.run).toContain('migrate()');
    const exists = await sql`select 1 from pg_namespace where nspname = ${schema}`;
    expect(exists).toHaveLength(0);
    expect(await store.migrate()).toEqual({ from: 0, to: 10 });
    expect(await store.migrate()).toEqual({ from: 10, to: 10 });
    expect(await store.load('r')).toBeUndefined();
    await store.close();
  });

  it('refuses a schema of another version', async () => {
    const schema = fresh();
    const store = pgStore({ sql, schema });
    await store.migrate();
    await sql.unsafe(
      `insert into "${schema}".schema_migrations (version, name) values (99, 'future')`,
    );
    const other = pgStore({ sql, schema });
    await expect(other.list()).rejects.toMatchObject({
      code: 'SCHEMA_MISMATCH',
      data: { version: 99, expected: 10 },
    });
    await store.close();
  });

  it('prints SQL that a migration tool can apply, with the schema substituted', async () => {
    const schema = fresh();
    const text = migrationSql({ schema });
    expect(text).toContain(`CREATE TABLE "${schema}".runs`);
    expect(text).not.toContain('{{schema}}');
    await sql.unsafe(text).simple();
    const store = pgStore({ sql, schema });
    expect(store.migrationSql()).toBe(text);
    expect(
      (await store.create({ runId: 'r', kind: 'k', name: 'n', signature: 's', snapshot: null }))
        .created,
    ).toBe(true);
    await store.close();
  });

  it('upgrades a version 3 schema in place: its journal and long arrays read back the same', async () => {
    const { schema, quoted } = await schemaAt(3);
    // A run as version 3 stored it: a row per element of its conversation, a row per journal entry.
    await sql.unsafe(
      `INSERT INTO ${quoted}.runs (run_id, kind, name, signature, status, snapshot, snapshot_version,
                                  checkpoint_seq, journal_seq)
       VALUES ('old', 'agent', 'n', 's', 'running', '{"state": {"messages": [], "trips": 4}}', 3, 2, 4)`,
    );
    for (let idx = 0; idx < 5; idx += 1) {
      await sql.unsafe(
        `INSERT INTO ${quoted}.snapshot_items VALUES ('old', '["state","messages"]', $1, $2::text::jsonb)`,
        [idx, JSON.stringify({ role: 'user', content: `m${idx}` })],
      );
    }
    for (const seq of [2, 3, 4]) {
      await sql.unsafe(`INSERT INTO ${quoted}.journal VALUES ('old', 1, $1, $2::text::jsonb)`, [
        seq,
        JSON.stringify({ seq, type: 'started', effectId: `e${seq}`, at: seq }),
      ]);
    }
    const store = pgStore({ sql, schema });
    expect(await store.migrate()).toEqual({ from: 3, to: 10 });
    const loaded = await store.load('old');
    expect(loaded?.run.snapshot).toEqual({
      state: {
        messages: [0, 1, 2, 3, 4].map((n) => ({ role: 'user', content: `m${n}` })),
        trips: 4,
      },
    });
    // Seq 2 is covered by the checkpoint; the others are still to be replayed.
    expect(loaded?.journal.map((entry) => entry.effectId)).toEqual(['e3', 'e4']);
    await store.close();
  });

  it('upgrades a version 4 schema in place: outputs and errors stored as jsonb read back the same', async () => {
    const { schema, quoted } = await schemaAt(4);
    const output = { title_of_the_book: 'Cairns', id: 7 };
    const error = { name: 'CairnError', code: 'MODEL_FAILED', message: 'm', retryable: false };
    await sql.unsafe(
      `INSERT INTO ${quoted}.runs (run_id, kind, name, signature, status, output, snapshot)
       VALUES ('done', 'agent', 'n', 's', 'completed', $1::text::jsonb, '{}'),
              ('failed', 'agent', 'n', 's', 'failed', NULL, '{}')`,
      [JSON.stringify(output)],
    );
    await sql.unsafe(`UPDATE ${quoted}.runs SET error = $1::text::jsonb WHERE run_id = 'failed'`, [
      JSON.stringify(error),
    ]);
    const store = pgStore({ sql, schema });
    expect(await store.migrate()).toEqual({ from: 4, to: 10 });
    expect((await store.load('done'))?.run.output).toEqual(output);
    expect((await store.load('failed'))?.run.error).toEqual(error);
    await store.close();
  });

  it('upgrades a version 5 schema holding runs: they load, claim and take signals as before', async () => {
    const { schema, quoted } = await schemaAt(5);
    await sql.unsafe(
      `INSERT INTO ${quoted}.runs (run_id, kind, name, signature, status, snapshot, output, journal)
       VALUES ('queued', 'agent', 'n', 's', 'queued', '{"step":1}', NULL,
               '{"seq":1,"type":"started","effectId":"e1","at":1}' || E'\\n'),
              ('done', 'agent', 'n', 's', 'completed', '{}', '{"b":1,"a":2}', '')`,
    );
    const store = pgStore({ sql, schema });
    try {
      expect(await store.migrate()).toEqual({ from: 5, to: 10 });
      const queued = await store.load('queued');
      expect(queued).toMatchObject({
        run: { status: 'queued', snapshot: { step: 1 }, wait: null },
        journal: [{ seq: 1, effectId: 'e1' }],
        signals: [],
      });
      expect((await store.load('done'))?.run).toMatchObject({ output: { b: 1, a: 2 }, wait: null });
      expect(await store.signal('queued', { name: 'go', payload: 1 })).toEqual({
        seq: 1,
        duplicate: false,
      });
      await expect(store.signal('done', { name: 'go', payload: 1 })).rejects.toMatchObject({
        code: 'RUN_ENDED',
      });
      const [lease] = await store.claim!({
        owner: 'o',
        ttlMs: 60_000,
        limit: 10,
        definitions: [{ kind: 'agent', name: 'n' }],
      });
      expect(lease?.claimed?.signals).toMatchObject([{ seq: 1, name: 'go' }]);
      await store.release(lease!);
    } finally {
      await store.close();
    }
  });

  it('upgrades a version 9 schema holding a run: its payloads can be replaced in place', async () => {
    const { schema, quoted } = await schemaAt(9);
    const old = `cairn:1:app@k1:${'A'.repeat(40)}`;
    const moved = `cairn:1:app@k2:${'B'.repeat(40)}`;
    await sql.unsafe(
      `INSERT INTO ${quoted}.runs (run_id, kind, name, signature, status, snapshot, output)
       VALUES ('done', 'agent', 'n', 's', 'completed', $1::text, $2::text)`,
      [JSON.stringify({ note: old }), JSON.stringify({ answer: old })],
    );
    const store = pgStore({ sql, schema });
    try {
      expect(await store.migrate()).toEqual({ from: 9, to: 10 });
      const { incarnation } = (await store.load('done'))!.run;
      expect(await store.replacePayloads('done', incarnation, new Map([[old, moved]]))).toBe(1);
      expect((await store.load('done'))?.run).toMatchObject({
        snapshot: { note: moved },
        output: { answer: moved },
      });
    } finally {
      await store.close();
    }
  });

  it('refuses the names Postgres would refuse later: pg_ and too long for the channel; the longest name works', async () => {
    for (const schema of ['pg_cairn', 'a'.repeat(59), 'b'.repeat(63)]) {
      expect(() => pgStore({ sql, schema })).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      );
    }
    const schema = `l${randomBytes(4).toString('hex')}`.padEnd(58, 'x');
    const store = pgStore({ sql, schema });
    try {
      await store.migrate();
      await store.create({ runId: 'r', kind: 'agent', name: 'a', signature: 's', snapshot: null });
      // The claim path's NOTIFY channel is `${schema}_work`: 63 bytes at most.
      const lease = await store.acquire('r', { owner: 'o', ttlMs: 60_000 });
      expect(lease?.epoch).toBe(1);
      await store.release(lease!);
    } finally {
      await store.close();
      await sql.unsafe(`drop schema if exists "${schema}" cascade`);
    }
  });

  it('rejects a schema name that is not a plain identifier', () => {
    for (const schema of ['Cairn', 'cairn; drop table x', 'a"b', '1abc', '']) {
      expect(() => pgStore({ sql, schema })).toThrow(CairnError);
    }
  });
});

describe('a user-configured client', () => {
  it('keeps snapshot keys and reads rows whatever transform the caller set', async () => {
    const camel = postgres(database().url, {
      max: 2,
      transform: postgres.camel,
      onnotice: () => undefined,
    });
    const schema = fresh();
    const store = pgStore({ sql: camel, schema });
    try {
      await store.migrate();
      await store.create({
        runId: 'r',
        kind: 'k',
        name: 'n',
        signature: 's',
        snapshot: { snake_case: { inner_key: 1 } },
      });
      const lease = (await store.acquire('r', { owner: 'o', ttlMs: 60_000 }))!;
      await store.append(lease, [
        {
          seq: 1,
          type: 'settled',
          effectId: 'e',
          at: 1,
          outcome: { status: 'ok', value: { tool_result: 2 } },
        },
      ]);
      const loaded = await store.load('r');
      expect(loaded?.run.snapshot).toEqual({ snake_case: { inner_key: 1 } });
      expect(loaded?.run.runId).toBe('r');
      expect(loaded?.journal[0]).toMatchObject({ outcome: { value: { tool_result: 2 } } });
    } finally {
      await store.close();
      await camel.end({ timeout: 1 });
    }
  });

  it('never ends the caller’s postgres() instance', async () => {
    const own = postgres(database().url, { max: 1, onnotice: () => undefined });
    const store = pgStore({ sql: own, schema: fresh() });
    await store.migrate();
    await store.close();
    expect(await own`select 1 as one`).toEqual([{ one: 1 }]);
    await own.end({ timeout: 1 });
  });

  it('prints no NOTICE through a client left at its defaults, migrating an up-to-date schema again', async () => {
    const notices: unknown[] = [];
    // postgres()'s default onnotice prints each notice with console.log: what a user sees.
    const own = postgres(database().url, { max: 1, onnotice: (notice) => notices.push(notice) });
    const store = pgStore({ sql: own, schema: fresh() });
    await store.migrate();
    await store.migrate();
    await store.close();
    await own.end({ timeout: 1 });
    expect(notices).toEqual([]);
  });
});
