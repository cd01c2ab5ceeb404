import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect as connectTcp } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { CairnError, LeaseLostError, type JournalEntry, type Lease } from '@cairn/sdk';
import { pgStore, type PgStore, type PgStoreOptions } from '@cairn/store-pg';
import { freePort, useTestDatabase, type TestDatabase } from '@cairn/testing';
import postgres, { type Sql } from 'postgres';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { advisoryLocks, connect, sleep } from './support.js';

// Debian's pgbouncer package; .ci/run installs it, so in CI a missing one fails instead of skipping.
const pgbouncerBinary = '/usr/sbin/pgbouncer';
const skip = !existsSync(pgbouncerBinary) && process.env.CI !== 'true';

const long = 60_000;
const definitions = [{ kind: 'agent', name: 'pooled' }];
const run = (runId: string, status: 'queued' | 'running' = 'running') => ({
  runId,
  status,
  kind: 'agent',
  name: 'pooled',
  signature: 's',
  snapshot: { step: 0 },
});
const marks = (...seqs: number[]): JournalEntry[] =>
  seqs.map((seq) => ({ seq, type: 'started', effectId: `e${seq}`, at: seq }));

interface PgBouncer {
  /** A URL of the test database through PgBouncer. */
  url: string;
  stop(): Promise<void>;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connectTcp({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Where `database` is, as `postgres()` options, straight to the server. */
function directOptions(database: TestDatabase): postgres.Options<Record<string, never>> {
  const url = new URL(database.url);
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: Number(url.port || 5432),
    database: database.database,
    user: decodeURIComponent(url.username) || userInfo().username,
    pass: decodeURIComponent(url.password) || undefined,
  };
}

/** Starts a PgBouncer of this file's own, in transaction mode on a free port, in front of `database`. */
async function startPgBouncer(database: TestDatabase): Promise<PgBouncer> {
  const target = directOptions(database);
  const dir = await mkdtemp(join(tmpdir(), 'cairn-pgbouncer-'));
  const port = await freePort();
  const server = [
    `host=${target.host}`,
    `port=${target.port}`,
    `dbname=${database.database}`,
    `user=${target.user}`,
    ...(target.pass ? [`password=${target.pass}`] : []),
  ].join(' ');
  await writeFile(join(dir, 'users.txt'), `"${target.user}" ""\n`);
  await writeFile(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `${database.database} = ${server}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'pool_mode = transaction',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      // Few server connections for many clients: the stores' statements share backends.
      'default_pool_size = 4',
      'max_client_conn = 200',
      'logfile =',
      'pidfile =',
      '',
    ].join('\n'),
  );
  // PgBouncer refuses to run as root: it then reads its files and becomes `nobody`.
  const user = process.getuid?.() === 0 ? ['-u', 'nobody'] : [];
  const child = spawn(pgbouncerBinary, [...user, join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout.on('data', (chunk: Buffer) => (log += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
  const exited = new Promise<string>((resolve) => {
    child.once('error', (error) => resolve(error.message));
    child.once('exit', (code, signal) => resolve(`exited with ${code ?? signal}`));
  });
  let failure: string | undefined;
  void exited.then((reason) => (failure = reason));
  for (let i = 0; i < 250 && failure === undefined && !(await accepts(port)); i += 1) {
    await sleep(20);
  }
  if (failure !== undefined || !(await accepts(port))) {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw new Error(
      `PgBouncer (${pgbouncerBinary}) did not start: ${failure ?? 'it does not listen'}. ` +
        `Install it with apt-get install pgbouncer (.ci/run does).\n${log}`,
    );
  }
  const url = new URL(database.url);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    async stop() {
      child.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Waits until `check` holds, or a while; the caller asserts. */
async function eventually(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100 && !(await check()); i += 1) await sleep(20);
}

if (skip) {
  it.skip(`behind PgBouncer: needs ${pgbouncerBinary} (apt-get install pgbouncer; .ci/run does)`, () =>
    undefined);
}

describe.skipIf(skip)('behind PgBouncer in transaction mode', () => {
  const database = useTestDatabase({ prefix: 'cairn_pgbouncer' });
  let bouncer: PgBouncer | undefined;
  let direct: Sql;
  let schema: string;
  let stores: PgStore[] = [];
  let clients: Sql[] = [];

  beforeAll(async () => {
    direct = connect(database());
    bouncer = await startPgBouncer(database());
  });
  afterAll(async () => {
    await direct?.end({ timeout: 5 });
    await bouncer?.stop();
  });

  /** A pool through PgBouncer, with `prepare: false` as a transaction pooler needs. */
  const pooled = (max = 4): Sql => {
    const sql = postgres(bouncer!.url, { max, prepare: false, onnotice: () => undefined });
    clients.push(sql);
    return sql;
  };
  const open = (options: Partial<PgStoreOptions> = {}): PgStore => {
    const store = pgStore({ schema, ...options, sql: options.sql ?? pooled() });
    stores.push(store);
    return store;
  };
  const row = async (runId: string) =>
    (
      await direct.unsafe(
        `select owner, epoch::int, recoveries from "${schema}".runs where run_id = $1`,
        [runId],
      )
    )[0];

  beforeEach(async () => {
    schema = `t_${randomBytes(6).toString('hex')}`;
    // Migrations run through PgBouncer too: one transaction.
    await open({ liveness: 'lease' }).migrate();
  });
  afterEach(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await Promise.all(clients.map((sql) => sql.end({ timeout: 1 })));
    stores = [];
    clients = [];
    await direct.unsafe(`drop schema if exists "${schema}" cascade`);
  });

  it('refuses sessions by default: prepare and the first claim fail with STORE_FAILED naming the pooler', async () => {
    const store = open();
    await store.create(run('r', 'queued'));
    const attempts = [
      // What a worker's start() calls first: it rejects there instead of failing every poll.
      () => store.prepare(),
      () => store.acquire('r', { owner: 'w', ttlMs: long }),
      () => store.claim!({ owner: 'w', ttlMs: long, limit: 10, definitions }),
    ];
    for (const attempt of attempts) {
      const error = await attempt().then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(CairnError);
      expect(error).toMatchObject({ code: 'STORE_FAILED', retryable: false });
      expect((error as Error).message).toMatch(/connection pooler such as PgBouncer/);
      expect((error as Error).message).toMatch(/lockConnection.*liveness: 'lease'/);
    }
    // It took nothing and left no lock on the backends PgBouncer keeps open.
    expect(await row('r')).toMatchObject({ owner: null, epoch: 0 });
    expect(await advisoryLocks(direct)).toBe(0);
    const other = open({ liveness: 'lease' });
    await other.prepare();
    expect(await other.acquire('r', { owner: 'x', ttlMs: long })).toMatchObject({ epoch: 1 });
  });

  it('runs lease-only end to end, holding no lock', async () => {
    const store = open({ liveness: 'lease' });
    const { from, to } = await store.migrate();
    expect(from).toBe(to);
    await store.create(run('r'));
    await store.create(run('q1', 'queued'));
    await store.create(run('q2', 'queued'));
    const lease = (await store.acquire('r', { owner: 'w', ttlMs: long }))!;
    expect(lease).toMatchObject({ epoch: 1, recoveries: 0 });
    await store.append(lease, marks(1, 2));
    await store.save(lease, {
      status: 'running',
      signature: 's',
      snapshot: { step: 1 },
      journalSeq: 2,
    });
    await store.append(lease, marks(3));
    const renewed = await store.renew(lease, long);
    expect(renewed.leaseUntil).toBeGreaterThanOrEqual(lease.leaseUntil);
    const loaded = await store.load('r');
    expect(loaded?.run).toMatchObject({ snapshot: { step: 1 }, owner: 'w', epoch: 1 });
    expect(loaded?.journal.map((entry) => entry.seq)).toEqual([3]);
    expect(await advisoryLocks(direct)).toBe(0);

    await store.release(renewed);
    expect(await row('r')).toMatchObject({ owner: null, epoch: 1 });
    const claimed = await store.claim!({ owner: 'w', ttlMs: long, limit: 10, definitions });
    expect(claimed.map((l) => [l.runId, l.epoch])).toEqual([
      ['r', 2],
      ['q1', 1],
      ['q2', 1],
    ]);
    expect(claimed[0]?.claimed?.journal.map((entry) => entry.seq)).toEqual([3]);
    for (const done of claimed) {
      await store.save(done, {
        status: 'completed',
        signature: 's',
        snapshot: {},
        output: done.runId,
        journalSeq: 3,
        release: true,
      });
      await store.release(done);
    }
    expect((await store.list({ status: 'completed' })).map((r) => r.runId).sort()).toEqual([
      'q1',
      'q2',
      'r',
    ]);
  });

  it('lease-only stores racing for the same runs never hold one twice', async () => {
    const seed = open({ liveness: 'lease' });
    const ids = Array.from({ length: 50 }, (_, i) => `q-${String(i).padStart(2, '0')}`);
    for (const id of ids) await seed.create(run(id, 'queued'));
    const workers = Array.from({ length: 8 }, () => open({ sql: pooled(3), liveness: 'lease' }));
    // Every worker at once: batch claims between explicit claims, each worker in its own order.
    const held = await Promise.all(
      workers.map(async (store, w) => {
        const owner = `w${w}`;
        const leases: Lease[] = [];
        for (let i = 0; i < ids.length; i += 1) {
          if (i % 5 === 0) {
            leases.push(...(await store.claim!({ owner, ttlMs: long, limit: 3, definitions })));
          }
          const lease = await store.acquire(ids[(i + w * 7) % ids.length]!, { owner, ttlMs: long });
          if (lease !== undefined) leases.push(lease);
        }
        return leases;
      }),
    );
    const all = held.flat();
    expect(all.map((lease) => lease.runId).sort()).toEqual(ids);
    expect(new Set(all.map((lease) => lease.epoch))).toEqual(new Set([1]));
    for (const lease of all) {
      expect(await row(lease.runId)).toMatchObject({ owner: lease.owner, epoch: 1, recoveries: 0 });
    }
    // Each holder writes under every lease it got.
    await Promise.all(
      held.map((leases, w) => Promise.all(leases.map((l) => workers[w]!.append(l, marks(1))))),
    );
    expect(await advisoryLocks(direct)).toBe(0);
  });

  it('lease-only: a crashed holder’s runs are taken once its leases run out, and it is fenced', async () => {
    const ttlMs = 2_000;
    const crashed = open({ liveness: 'lease' });
    const taker = open({ liveness: 'lease' });
    for (const id of ['c1', 'c2', 'c3']) await crashed.create(run(id, 'queued'));
    const leases = await crashed.claim!({ owner: 'crashed', ttlMs, limit: 10, definitions });
    expect(leases).toHaveLength(3);
    await crashed.append(leases[0]!, marks(1));
    // It dies without releasing anything; lease-only, nothing on the server tells.
    await crashed.close();
    expect(await taker.acquire('c1', { owner: 'taker', ttlMs })).toBeUndefined();
    expect(await taker.claim!({ owner: 'taker', ttlMs, limit: 10, definitions })).toEqual([]);

    // A batch claim looks for leases that ran out every half of its own ttl.
    await sleep(ttlMs + 500);
    const taken = await taker.claim!({ owner: 'taker', ttlMs, limit: 10, definitions });
    expect(taken.map((l) => [l.runId, l.epoch, l.takenFrom, l.claimed?.run.recoveries])).toEqual([
      ['c1', 2, 'crashed', 1],
      ['c2', 2, 'crashed', 1],
      ['c3', 2, 'crashed', 1],
    ]);
    expect(taken[0]?.claimed?.journal.map((entry) => entry.seq)).toEqual([1]);
    // The old holder comes back: every write and renewal under its leases is refused.
    await expect(crashed.append(leases[0]!, marks(2))).rejects.toBeInstanceOf(LeaseLostError);
    await expect(
      crashed.save(leases[1]!, { status: 'running', signature: 's', snapshot: {}, journalSeq: 0 }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    await expect(crashed.renew(leases[2]!, ttlMs)).rejects.toBeInstanceOf(LeaseLostError);
    await taker.append(taken[0]!, marks(2));
    expect((await taker.load('c1'))?.journal.map((entry) => entry.seq)).toEqual([1, 2]);
  });

  it('with lockConnection straight to Postgres, sessions work: a crash is taken over at once', async () => {
    const lockConnection = directOptions(database());
    const a = open({ lockConnection });
    const b = open({ lockConnection, takeoverGraceMs: 0 });
    await a.create(run('r1'));
    await a.create(run('r2'));
    const l1 = (await a.acquire('r1', { owner: 'a', ttlMs: long }))!;
    const l2 = (await a.acquire('r2', { owner: 'a', ttlMs: long }))!;
    // a is alive: b's claims, on backends PgBouncer shares, find its session lock held.
    expect(await b.acquire('r1', { owner: 'b', ttlMs: long })).toBeUndefined();
    expect(await b.claim!({ owner: 'b', ttlMs: long, limit: 10, definitions })).toEqual([]);
    expect(await advisoryLocks(direct)).toBe(2);
    await a.append(l1, marks(1));

    // a dies without releasing: its session ends, and its runs are taken long before the lease runs out.
    await a.close();
    await eventually(async () => (await advisoryLocks(direct)) === 1);
    for (const lease of [l1, l2]) {
      const taken = await b.acquire(lease.runId, { owner: 'b', ttlMs: long });
      expect(taken).toMatchObject({ epoch: 2, recoveries: 1, takenFrom: 'a' });
    }
    await expect(a.append(l1, marks(2))).rejects.toBeInstanceOf(LeaseLostError);
    await expect(a.renew(l2, long)).rejects.toBeInstanceOf(LeaseLostError);
    expect(await row('r1')).toMatchObject({ owner: 'b', epoch: 2, recoveries: 1 });
  });

  it('leaves no advisory lock on the server once every store is closed', async () => {
    const sessions = open({ lockConnection: directOptions(database()) });
    const leaseOnly = open({ liveness: 'lease' });
    await sessions.create(run('s'));
    await leaseOnly.create(run('l'));
    expect(await sessions.acquire('s', { owner: 's', ttlMs: long })).toBeDefined();
    expect(await leaseOnly.acquire('l', { owner: 'l', ttlMs: long })).toBeDefined();
    await expect(open().acquire('s', { owner: 'x', ttlMs: long })).rejects.toMatchObject({
      code: 'STORE_FAILED',
    });
    await Promise.all(stores.map((store) => store.close()));
    // PgBouncer keeps its server connections open: a lock taken through it would stay.
    await eventually(async () => (await advisoryLocks(direct)) === 0);
    expect(await advisoryLocks(direct)).toBe(0);
  });
});
