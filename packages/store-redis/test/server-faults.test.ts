import { LeaseLostError, type JournalEntry } from '@cairn/sdk';
import { redisStore, type RedisStore } from '@cairn/store-redis';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The test reaches into the key layout to see an index entry a run whose keys expired leaves behind.
import { bucketOf, keySpace } from '../src/keys.js';
import { noRedisServer, startOwnRedis, type OwnRedis } from './redis-server.js';
import { connect, skippedBecause, sleep, uniquePrefix } from './support.js';

const reason = noRedisServer();
const long = 60_000;
const run = (runId: string) => ({
  runId,
  kind: 'agent',
  name: 'server',
  signature: 's',
  snapshot: null,
});
const marks = (...seqs: number[]): JournalEntry[] =>
  seqs.map((seq) => ({ seq, type: 'started', effectId: `e${seq}`, at: seq }));

function ready(client: Redis): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => client.once('ready', () => resolve()));
}

if (reason !== undefined) {
  skippedBecause(reason);
} else {
  // One server of this file's own, with AOF and `appendfsync always`: it is restarted and flushed.
  let server: OwnRedis;
  const clients: Redis[] = [];
  beforeAll(async () => {
    server = await startOwnRedis({ appendfsync: 'always' });
  });
  afterAll(async () => {
    for (const client of clients) client.disconnect();
    await server?.stop();
  });

  async function stores(count: number): Promise<{ stores: RedisStore[]; clients: Redis[] }> {
    const prefix = uniquePrefix('server');
    const opened = await Promise.all(Array.from({ length: count }, () => connect(server.url)));
    clients.push(...opened);
    return { stores: opened.map((client) => redisStore({ client, prefix })), clients: opened };
  }

  describe.each(['SIGTERM', 'SIGKILL'] as const)('a server restarted with %s mid-run', (signal) => {
    it('keeps the epoch, the lease and every acknowledged write', async () => {
      const {
        stores: [a, b, c],
        clients: opened,
      } = await stores(3);
      await a!.create(run('r'));
      const first = (await a!.acquire('r', { owner: 'a', ttlMs: long }))!;
      await a!.append(first, marks(1, 2));
      await a!.release(first);
      const second = (await b!.acquire('r', { owner: 'b', ttlMs: long }))!;
      await b!.append(second, marks(3));

      await server.restart(signal);
      await Promise.all(opened.map(ready));

      const loaded = await c!.load('r');
      expect(loaded?.run).toMatchObject({ epoch: second.epoch, owner: 'b' });
      expect(loaded?.journal.map((entry) => entry.seq)).toEqual([1, 2, 3]);
      // The lease survived: nobody else may claim, the holder renews and writes on.
      expect(await c!.acquire('r', { owner: 'c', ttlMs: long })).toBeUndefined();
      const renewed = await b!.renew(second, long);
      await b!.append(renewed, marks(4));
      await b!.release(renewed);
      // The epoch goes on from where it was, so the old holder stays fenced.
      const third = (await c!.acquire('r', { owner: 'c', ttlMs: long }))!;
      expect(third.epoch).toBe(second.epoch + 1);
      await expect(a!.append(first, marks(5))).rejects.toBeInstanceOf(LeaseLostError);
      await expect(b!.append(second, marks(5))).rejects.toBeInstanceOf(LeaseLostError);
      await expect(b!.renew(renewed, long)).rejects.toBeInstanceOf(LeaseLostError);
    });
  });

  describe('a server that lost its data (FLUSHALL)', () => {
    it('fences the old holder out, and never gives its token to the next holder of the same epoch', async () => {
      const {
        stores: [old, next],
        clients: [admin],
      } = await stores(2);
      await old!.create(run('r'));
      const lease = (await old!.acquire('r', { owner: 'w', ttlMs: long }))!;
      await old!.append(lease, marks(1));

      await admin!.flushall();

      await expect(old!.append(lease, marks(2))).rejects.toThrow(/no longer exists/);
      await expect(old!.renew(lease, long)).rejects.toBeInstanceOf(LeaseLostError);
      expect(await old!.load('r')).toBeUndefined();
      await expect(next!.acquire('r', { owner: 'w', ttlMs: long })).rejects.toMatchObject({
        code: 'RUN_NOT_FOUND',
      });

      // The run is created again, as a client would: its first claim is epoch 1 again, under the same owner
      // name even, but in a new incarnation with a new token, so the old holder's writes and renewals are
      // refused.
      await next!.create(run('r'));
      const again = (await next!.acquire('r', { owner: 'w', ttlMs: long }))!;
      expect(again.epoch).toBe(lease.epoch);
      for (const write of [
        () => old!.append(lease, marks(2)),
        () =>
          old!.save(lease, {
            status: 'completed',
            signature: 's',
            snapshot: 'stale',
            journalSeq: 1,
          }),
        () => old!.updateStatus(lease, { status: 'cancelled' }),
        () => old!.renew(lease, long),
      ]) {
        await expect(write()).rejects.toBeInstanceOf(LeaseLostError);
      }
      await old!.release(lease);
      await next!.append(again, marks(1));
      const loaded = await next!.load('r');
      expect(loaded?.run).toMatchObject({ owner: 'w', status: 'running', snapshot: null });
      expect(loaded?.journal.map((entry) => entry.seq)).toEqual([1]);
      await next!.renew(again, long);
    });
  });

  describe('settled runs', () => {
    it('expire after settledTtlMs, leave running runs alone, and prune drops their index entries', async () => {
      const prefix = uniquePrefix('ttl');
      const client = await connect(server.url);
      clients.push(client);
      const store = redisStore({ client, prefix, settledTtlMs: 200 });
      await store.create(run('done'));
      await store.create(run('open'));
      const lease = (await store.acquire('done', { owner: 'w', ttlMs: long }))!;
      await store.append(lease, marks(1));
      await store.updateStatus(lease, { status: 'completed' });
      await store.release(lease);
      expect((await store.list({ status: 'completed' })).map((r) => r.runId)).toEqual(['done']);
      await sleep(300);
      expect(await store.load('done')).toBeUndefined();
      expect((await store.list()).map((r) => r.runId)).toEqual(['open']);
      const completedIndex = keySpace(prefix).index(bucketOf('done'), 'completed');
      expect(await client.zcard(completedIndex)).toBe(1);
      expect(await store.prune({ olderThan: Date.now() + 60_000 })).toBe(0);
      expect(await client.zcard(completedIndex)).toBe(0);
      expect((await store.list()).map((r) => r.runId)).toEqual(['open']);
    });
  });
}
