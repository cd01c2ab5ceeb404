import { CairnError } from '@cairn/sdk';
import { redisStore, type RedisStore } from '@cairn/store-redis';
import type { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  noRedisServer,
  startOwnCluster,
  startOwnRedis,
  type OwnCluster,
  type OwnRedis,
} from './redis-server.js';
import { connect, skippedBecause, uniquePrefix } from './support.js';

// Runs stored in the key layout before buckets (a hash tag per run id, one global index per status) are
// refused with SCHEMA_MISMATCH until `migrateKeyLayout` moves them, which is safe to run again after a crash.
// The old layout is written here by hand, as that version of the store wrote it.

const future = () => Date.now() + 600_000;

interface OldRun {
  runId: string;
  status: string;
  order: number;
  extra?: Record<string, string>;
  journal?: string[];
  lease?: string;
  children?: string[];
  /** Old index statuses naming the run: its own, unless a lost index step left it elsewhere or nowhere. */
  indexed?: string[];
}

async function writeOldRun(admin: Redis, prefix: string, old: OldRun): Promise<void> {
  const tag = old.runId.replace(/[%{}]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const base = `${prefix}:{${tag}}`;
  await admin.hset(`${base}:run`, {
    runId: old.runId,
    incarnation: `inc-${old.runId}`,
    kind: 'agent',
    name: 'migrate',
    signature: 's',
    snapshot: JSON.stringify({ at: old.runId }),
    status: old.status,
    epoch: '3',
    recoveries: '1',
    cancel: '0',
    createdAt: String(old.order),
    updatedAt: String(old.order),
    order: String(old.order * 1000),
    ...old.extra,
  });
  for (const [i, entry] of (old.journal ?? []).entries())
    await admin.zadd(`${base}:journal`, i + 1, entry);
  if (old.lease !== undefined) await admin.set(`${base}:lease`, old.lease, 'PX', 600_000);
  for (const child of old.children ?? []) await admin.sadd(`${base}:children`, child);
  for (const status of old.indexed ?? [old.status])
    await admin.zadd(`${prefix}:index:${status}`, old.order * 1000, old.runId);
}

const oldRuns = (): OldRun[] => [
  { runId: 'queued{1}', status: 'queued', order: 1_000 },
  {
    runId: 'held',
    status: 'running',
    order: 2_000,
    extra: { owner: 'w', leaseUntil: String(future()), token: '3:abc:w', seq: '2' },
    lease: '3:abc:w',
    journal: [
      JSON.stringify({ seq: 1, type: 'started', effectId: 'e1', at: 1 }),
      JSON.stringify({ seq: 2, type: 'started', effectId: 'e2', at: 2 }),
    ],
    children: ['held/child'],
  },
  {
    runId: 'held/child',
    status: 'running',
    order: 3_000,
    extra: { parentId: 'held', parentInc: 'inc-held', rootId: 'held', rootInc: 'inc-held' },
  },
  // Issue 20's stale entries: still under `suspended` too, though it completed.
  { runId: 'done', status: 'completed', order: 4_000, indexed: ['suspended', 'completed'] },
  // Issue 20's lost run: in no index at all.
  { runId: 'lost', status: 'suspended', order: 5_000, indexed: [] },
];

function migrationTests(
  open: () => Promise<{ store: () => RedisStore; admin: Redis; prefix: string }>,
) {
  it('refuses a prefix in the old layout with SCHEMA_MISMATCH, then migrates it, resumably', async () => {
    const { store: newStore, admin, prefix } = await open();
    for (const old of oldRuns()) await writeOldRun(admin, prefix, old);
    const store = newStore();
    const definitions = [{ kind: 'agent', name: 'migrate' }];
    for (const call of [
      () => store.list(),
      () => store.claimable({ limit: 10, definitions }),
      () => store.load('held'),
      () => store.signal('held', { name: 'go', payload: null }),
      () => store.mailbox('held'),
      () => store.nextWake(definitions),
    ]) {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CairnError);
      expect(error).toMatchObject({
        code: 'SCHEMA_MISMATCH',
        data: { prefix, run: 'store.migrateKeyLayout()' },
      });
    }

    expect(await store.migrateKeyLayout({ runIds: ['lost'] })).toBe(5);
    // A crash after a run was written anew and before its old keys went: the next pass finishes it.
    await writeOldRun(admin, prefix, oldRuns()[0]!);
    expect(await store.migrateKeyLayout()).toBe(0);
    for (const status of ['queued', 'running', 'suspended', 'completed'])
      expect(await admin.exists(`${prefix}:index:${status}`)).toBe(0);

    expect((await store.list()).map((r) => [r.runId, r.status])).toEqual([
      ['queued{1}', 'queued'],
      ['held', 'running'],
      ['held/child', 'running'],
      ['done', 'completed'],
      ['lost', 'suspended'],
    ]);
    expect((await store.list({ status: 'suspended' })).map((r) => r.runId)).toEqual(['lost']);
    const held = await store.load('held');
    expect(held?.run).toMatchObject({ owner: 'w', epoch: 3, snapshot: { at: 'held' } });
    expect(held?.journal.map((entry) => entry.seq)).toEqual([1, 2]);
    // The old layout had no waits and no mailboxes: a migrated run waits for nothing, its mailbox is empty.
    expect(held?.run.wait).toBeNull();
    expect(held?.signals).toEqual([]);
    expect((await store.list()).every((r) => r.wait === null)).toBe(true);
    expect((await store.load('held/child'))?.run).toMatchObject({ owner: 'w', rootRunId: 'held' });
    // The held run keeps its live lease; the others are claimable, oldest first.
    expect(await store.claimable({ limit: 10, definitions })).toEqual(['queued{1}', 'lost']);
    expect(await store.acquire('held', { owner: 'v', ttlMs: 1_000 })).toBeUndefined();
    expect(await store.prune({ olderThan: Date.now() })).toBe(1);
    expect(await store.load('done')).toBeUndefined();
  });
}

const reason = noRedisServer();

if (reason !== undefined) {
  skippedBecause(reason);
} else {
  let single: OwnRedis;
  let cluster: OwnCluster;
  const clients: Redis[] = [];
  beforeAll(async () => {
    [single, cluster] = await Promise.all([startOwnRedis(), startOwnCluster()]);
  });
  afterAll(async () => {
    for (const client of clients) client.disconnect();
    await Promise.all([single?.stop(), cluster?.stop()]);
  });

  /** A store's client, and an admin client that writes the old layout (a plain client: one node owns every slot). */
  const opener = (url: () => string, open: () => Promise<Redis | Cluster>) => async () => {
    const prefix = uniquePrefix('migrate');
    const admin = await connect(url());
    clients.push(admin);
    const client = await open();
    return { store: () => redisStore({ client, prefix }), admin, prefix };
  };

  describe('on a single node', () => {
    migrationTests(
      opener(
        () => single.url,
        async () => {
          const client = await connect(single.url);
          clients.push(client);
          return client;
        },
      ),
    );
  });
  describe('on a one-node Cluster', () => {
    migrationTests(
      opener(
        () => cluster.url,
        () => cluster.open(),
      ),
    );
  });
}
