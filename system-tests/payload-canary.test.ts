import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { runCli } from '@cairn/cli';
import { aesGcmCodec, deflateCodec, protectPayloads, type DurableStore } from '@cairn/sdk';
import { pgStore } from '@cairn/store-pg';
import { redisStore } from '@cairn/store-redis';
import { useTestDatabase } from '@cairn/testing';
import { Redis } from 'ioredis';
import postgres, { type Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canaryRun, marker, markersPerRun } from './fixtures/canary-agent.js';

// With the AES-GCM codec on, no marker a run was given reaches what the servers keep: Postgres's tables (as
// pg_dump writes them) and its WAL, Redis's AOF and RDB files. A few runs without the codec beside them are the
// control: their markers are found in the same places, so a search that finds nothing is one that works.
const database = useTestDatabase({ prefix: 'cairn_canary' });
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const codec = [deflateCodec(), aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' })];
let sql: Sql;
let redis: Redis;
beforeAll(() => {
  sql = postgres(database().url, { max: 10, onnotice: () => undefined });
  redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
  redis?.disconnect();
});

/** Runs `count` canary runs, `concurrency` at a time; each completes as it would without a codec. */
async function runAll(store: DurableStore, prefix: string, count: number, concurrency = 25) {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const run = next++;
      const { output, charges } = await canaryRun(store, prefix, run);
      const answer = Array.from({ length: 11 }, (_, i) => marker(prefix, run, 39 + i)).join(' ');
      expect(output).toBe(JSON.stringify({ answer }));
      expect(charges).toBe(1);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** The markers (of a prefix) in a text or bytes, counted. */
const found = (where: string | Buffer, prefix: string) =>
  (where.toString('latin1').match(new RegExp(`${prefix}-\\d+-\\d+-`, 'g')) ?? []).length;

describe('the AES-GCM codec keeps every marker out of what the servers store', () => {
  it(`Postgres: 1,000 runs of ${markersPerRun} markers, in pg_dump and in the WAL written meanwhile`, async () => {
    const schema = `canary_${randomBytes(4).toString('hex')}`;
    const controlSchema = `${schema}_control`;
    const raw = pgStore({ sql, schema });
    const control = pgStore({ sql, schema: controlSchema });
    await raw.migrate();
    await control.migrate();
    const from = await walPosition(sql);
    try {
      await runAll(protectPayloads(raw, { codec }), 'zqCANARY', 1_000);
      await runAll(control, 'zqCONTROL', 3, 3);
      await sql`checkpoint`;
      const to = await walPosition(sql);

      const { stdout: dump } = await promisify(execFile)(
        'pg_dump',
        ['--dbname', database().url, '--schema', schema, '--schema', controlSchema],
        { maxBuffer: 1 << 30 },
      );
      expect(found(dump, 'zqCONTROL')).toBeGreaterThan(0);
      expect(found(dump, 'zqCANARY')).toBe(0);
      expect(dump).toContain('cairn:1:deflate+aes-gcm@k1:');

      // Every WAL segment from the first run's start to the checkpoint after the last, read by the server.
      const segments = await sql<{ name: string }[]>`
        select name from pg_ls_waldir()
        where name ~ '^[0-9A-F]{24}$'
          and name between pg_walfile_name(${from}::pg_lsn) and pg_walfile_name(${to}::pg_lsn)
        order by name`;
      expect(segments.length).toBeGreaterThan(0);
      let controlHits = 0;
      for (const { name } of segments) {
        const [row] = await sql<{ bytes: Buffer }[]>`
          select pg_read_binary_file(${`pg_wal/${name}`}) as bytes`;
        const bytes = row!.bytes;
        expect(found(bytes, 'zqCANARY'), `markers in WAL segment ${name}`).toBe(0);
        controlHits += found(bytes, 'zqCONTROL');
      }
      expect(controlHits).toBeGreaterThan(0);

      // What `cairn` prints of them without the codec: the listing, and each of 25 runs shown and told.
      const printed: string[] = [
        await cairn(['runs', 'list', '--json', '--limit', '2000'], schema),
      ];
      for (let run = 0; run < 1_000; run += 40) {
        const runId = `zqCANARY-run-${run}`;
        printed.push(await cairn(['runs', 'show', runId, '--json'], schema));
        printed.push(await cairn(['runs', 'timeline', runId, '--json'], schema));
      }
      const output = printed.join('\n');
      expect(output).toContain('zqCANARY-run-960');
      expect(found(output, 'zqCANARY')).toBe(0);
      expect(output).not.toContain('cairn:1:');
    } finally {
      await raw.close();
      await control.close();
      await sql.unsafe(`drop schema if exists "${schema}" cascade`);
      await sql.unsafe(`drop schema if exists "${controlSchema}" cascade`);
    }
  });

  it(`Redis: 200 runs of ${markersPerRun} markers, in its AOF and its RDB`, async () => {
    const prefix = `cairn-test:canary:${randomBytes(4).toString('hex')}`;
    const [, dir] = (await redis.config('GET', 'dir')) as [string, string];
    const [, appendonly] = (await redis.config('GET', 'appendonly')) as [string, string];
    const [, rdbcompression] = (await redis.config('GET', 'rdbcompression')) as [string, string];
    // The AOF on while the runs write (every write command they cause, as Redis keeps it), and an RDB
    // written uncompressed after, so a plaintext marker would be there to find.
    await redis.config('SET', 'appendonly', 'yes');
    await redis.config('SET', 'rdbcompression', 'no');
    const raw = redisStore({ client: redis, prefix });
    const control = redisStore({ client: redis, prefix: `${prefix}:control` });
    try {
      await waitForAofRewrite(redis);
      await runAll(protectPayloads(raw, { codec }), 'zqCANARY', 200);
      await runAll(control, 'zqCONTROL', 3, 3);
      await redis.save();
      const aofDir = join(dir, 'appendonlydir');
      const aofFiles = (await readdir(aofDir)).filter((name) => name.endsWith('.aof'));
      const aof = Buffer.concat(
        await Promise.all(aofFiles.map((name) => readFile(join(aofDir, name)))),
      );
      const rdb = await readFile(join(dir, 'dump.rdb'));
      for (const [what, bytes] of [
        ['AOF', aof],
        ['RDB', rdb],
      ] as const) {
        expect(found(bytes, 'zqCONTROL'), `control markers in the ${what}`).toBeGreaterThan(0);
        expect(found(bytes, 'zqCANARY'), `markers in the ${what}`).toBe(0);
      }
    } finally {
      await raw.close();
      await control.close();
      await redis.config('SET', 'appendonly', appendonly);
      await redis.config('SET', 'rdbcompression', rdbcompression);
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
        cursor = next;
        if (keys.length > 0) await redis.unlink(...keys);
      } while (cursor !== '0');
    }
  });
});

/** Runs `cairn` in this process on the schema; its standard output. */
async function cairn(args: readonly string[], schema: string): Promise<string> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    env: { DATABASE_URL: database().url, CAIRN_SCHEMA: schema },
  });
  expect(code, stderr).toBe(0);
  return stdout;
}

/** Where the server's WAL is written up to now. */
async function walPosition(sql: Sql): Promise<string> {
  const [row] = await sql<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`;
  return row!.lsn;
}

/** Turning the AOF on rewrites it in the background; writes are in the AOF once that is done. */
async function waitForAofRewrite(redis: Redis): Promise<void> {
  for (let i = 0; i < 200; i += 1) {
    const info = await redis.info('persistence');
    if (
      /aof_enabled:1/.test(info) &&
      /aof_rewrite_in_progress:0/.test(info) &&
      /aof_rewrite_scheduled:0/.test(info)
    )
      return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('Redis did not finish turning its AOF on within 10 s');
}
