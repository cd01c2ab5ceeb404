import { CairnError, LeaseLostError, type JournalEntry } from '@cairn/sdk';
import { redisStore, type RedisStore } from '@cairn/store-redis';
import { startTcpProxy, type TcpProxy } from '@cairn/testing';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
// The test reaches into the key layout to change a run behind the store's back.
import { keySpace } from '../src/keys.js';
import {
  connect,
  connectThroughProxy,
  createRedisHarness,
  skippedBecause,
  sleep,
  unreachable,
  until,
  type RedisHarness,
} from './support.js';

const reason = await unreachable();
const long = 60_000;
const run = (runId: string) => ({
  runId,
  kind: 'agent',
  name: 'faults',
  signature: 's',
  snapshot: { step: 0 },
});
const marks = (...seqs: number[]): JournalEntry[] =>
  seqs.map((seq) => ({ seq, type: 'started', effectId: `e${seq}`, at: seq }));
const seqs = async (store: RedisStore, runId: string) =>
  (await store.load(runId))?.journal.map((entry) => entry.seq);

/** What a promise settled with: its value, or the error it was rejected with. */
const outcome = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (value) => value,
    (error: unknown) => error,
  );

if (reason !== undefined) {
  skippedBecause(reason);
} else {
  let harness: RedisHarness;
  beforeEach(async () => {
    harness = await createRedisHarness('faults');
  });
  afterEach(async () => {
    await harness.close();
  });

  describe('a holder paused past its lease', () => {
    it('has every write and its renewal refused once another worker claimed the run', async () => {
      const paused = await harness.store();
      const claimer = await harness.store();
      await paused.create(run('r'));
      const lease = (await paused.acquire('r', { owner: 'paused', ttlMs: 200 }))!;
      await paused.append(lease, marks(1));
      await sleep(300);
      const taken = (await claimer.acquire('r', { owner: 'claimer', ttlMs: long }))!;
      expect(taken.epoch).toBe(lease.epoch + 1);
      expect(taken.recoveries).toBe(1);

      // The paused process wakes up: each Lua write checks the epoch first and refuses.
      await expect(paused.append(lease, marks(2))).rejects.toBeInstanceOf(LeaseLostError);
      await expect(
        paused.save(lease, { status: 'completed', signature: 's', snapshot: {}, journalSeq: 1 }),
      ).rejects.toBeInstanceOf(LeaseLostError);
      await expect(paused.updateStatus(lease, { status: 'cancelled' })).rejects.toBeInstanceOf(
        LeaseLostError,
      );
      await expect(paused.renew(lease, long)).rejects.toBeInstanceOf(LeaseLostError);
      await paused.release(lease);

      await claimer.append(taken, marks(2));
      expect(await seqs(claimer, 'r')).toEqual([1, 2]);
      expect((await claimer.load('r'))?.run).toMatchObject({
        owner: 'claimer',
        epoch: taken.epoch,
        status: 'running',
      });
    });

    it('has its writes refused once its lease ran out, even when nobody claimed the run', async () => {
      const paused = await harness.store();
      await paused.create(run('r'));
      const lease = (await paused.acquire('r', { owner: 'paused', ttlMs: 200 }))!;
      await paused.append(lease, marks(1));
      await sleep(300);
      await expect(paused.append(lease, marks(2))).rejects.toThrow(/lease ran out/);
      await expect(paused.renew(lease, long)).rejects.toBeInstanceOf(LeaseLostError);
      expect(await seqs(paused, 'r')).toEqual([1]);
      // Claiming it again is how the holder carries on.
      const again = (await paused.acquire('r', { owner: 'paused', ttlMs: long }))!;
      await paused.append(again, marks(2));
      expect(await seqs(paused, 'r')).toEqual([1, 2]);
    });
  });

  describe('the network', () => {
    let proxy: TcpProxy;
    let client: Redis;
    let store: RedisStore;
    beforeEach(async () => {
      ({ proxy, client } = await connectThroughProxy());
      store = redisStore({ client, prefix: harness.prefix, timeoutMs: 1_000 });
    });
    afterEach(async () => {
      client.disconnect();
      await proxy.close();
    });

    it('refuses a write and a renewal that reach Redis after the lease ran out', async () => {
      const direct = await harness.store();
      await store.create(run('r'));
      const lease = (await store.acquire('r', { owner: 'w', ttlMs: 300 }))!;
      await store.append(lease, marks(1));

      proxy.hold('toServer');
      const write = outcome(store.append(lease, marks(2, 3)));
      const renewal = outcome(store.renew(lease, long));
      await sleep(400);
      proxy.release();

      // The client was connected all along, so only the deadline in the script can refuse them.
      const [written, renewed] = await Promise.all([write, renewal]);
      expect(written).toBeInstanceOf(LeaseLostError);
      expect(renewed).toBeInstanceOf(LeaseLostError);
      await sleep(200);
      expect(await seqs(direct, 'r')).toEqual([1]);
      expect((await direct.load('r'))?.run.leaseUntil).toBe(lease.leaseUntil);
    });

    it('sends nothing while the client is offline, so nothing is applied late', async () => {
      await store.create(run('r'));
      const lease = (await store.acquire('r', { owner: 'w', ttlMs: long }))!;
      await store.append(lease, marks(1));
      await proxy.cut();
      await until(client, 'reconnecting');

      for (const attempt of [
        () => store.append(lease, marks(2)),
        () => store.renew(lease, long),
        () => store.acquire('r', { owner: 'other', ttlMs: long }),
        () => store.load('r'),
      ]) {
        await expect(attempt()).rejects.toMatchObject({
          code: 'STORE_UNAVAILABLE',
          retryable: true,
        });
      }

      await proxy.restore();
      await until(client, 'ready');
      await sleep(100);
      expect(await seqs(store, 'r')).toEqual([1]);
      const renewed = await store.renew(lease, long);
      await store.append(renewed, marks(2));
      expect(await seqs(store, 'r')).toEqual([1, 2]);
    });

    it('fails a write whose request was lost with a retryable error, and applies none of it', async () => {
      const direct = await harness.store();
      await store.create(run('r'));
      const lease = (await store.acquire('r', { owner: 'w', ttlMs: 1_000 }))!;
      await store.append(lease, marks(1, 2));

      proxy.hold('toServer');
      const write = outcome(store.append(lease, marks(3, 4)));
      await sleep(50);
      await proxy.cut();
      const error = await write;
      expect(error).toBeInstanceOf(CairnError);
      expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', retryable: true });
      expect(await seqs(direct, 'r')).toEqual([1, 2]);

      // ioredis resends the unanswered script after reconnecting: past the lease it is refused.
      await sleep(1_000);
      await proxy.restore();
      await until(client, 'ready');
      await sleep(100);
      expect(await seqs(direct, 'r')).toEqual([1, 2]);
    });

    it('fails a write whose reply was lost with a retryable error; the write landed whole and a retry adds nothing', async () => {
      const direct = await harness.store();
      await store.create(run('r'));
      const lease = (await store.acquire('r', { owner: 'w', ttlMs: long }))!;
      await store.append(lease, marks(1, 2));

      proxy.hold('toClient');
      const write = outcome(store.append(lease, marks(3, 4, 5)));
      for (let i = 0; i < 100 && (await seqs(direct, 'r'))?.length !== 5; i += 1) await sleep(20);
      await proxy.cut();
      expect(await write).toMatchObject({ code: 'STORE_UNAVAILABLE', retryable: true });
      expect(await seqs(direct, 'r')).toEqual([1, 2, 3, 4, 5]);

      await proxy.restore();
      await until(client, 'ready');
      await store.append(lease, marks(3, 4, 5));
      expect(await seqs(direct, 'r')).toEqual([1, 2, 3, 4, 5]);
    });
  });

  describe('errors', () => {
    it('refuses a run whose snapshot or journal was changed behind the store with SNAPSHOT_INVALID', async () => {
      const store = await harness.store();
      const keys = keySpace(harness.prefix);
      await store.create(run('bad-snapshot'));
      await harness.admin.hset(keys.run('bad-snapshot').run, 'snapshot', '{"step":');
      await store.create(run('bad-journal'));
      await harness.admin.zadd(keys.run('bad-journal').journal, 1, 'not json');
      for (const runId of ['bad-snapshot', 'bad-journal']) {
        const error = await outcome(store.load(runId));
        expect(error).toBeInstanceOf(CairnError);
        expect(error).toMatchObject({ code: 'SNAPSHOT_INVALID', data: { runId } });
      }
    });

    it('maps a closed port to a retryable STORE_UNAVAILABLE', async () => {
      const closed = await startTcpProxy({ host: '127.0.0.1', port: 6379 });
      const port = closed.port;
      await closed.close();
      const nowhere = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 0 });
      nowhere.on('error', () => undefined);
      try {
        const store = redisStore({ client: nowhere, prefix: harness.prefix, timeoutMs: 2_000 });
        for (const attempt of [
          () => store.load('r'),
          () => store.acquire('r', { owner: 'w', ttlMs: long }),
          () => store.signal('r', { name: 'go', payload: 1, idempotencyKey: 'k' }),
          () => store.mailbox('r'),
          () => store.nextWake([{ kind: 'agent', name: 'faults' }]),
        ]) {
          const error = await outcome(attempt());
          expect(error).toBeInstanceOf(CairnError);
          expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', retryable: true });
        }
      } finally {
        nowhere.disconnect();
      }
    });

    it('maps a script error to STORE_FAILED and a client the user closed to STORE_FAILED', async () => {
      const store = await harness.store();
      await harness.admin.set(keySpace(harness.prefix).run('r').run, 'not a hash');
      const error = await outcome(store.acquire('r', { owner: 'w', ttlMs: long }));
      expect(error).toBeInstanceOf(CairnError);
      expect(error).toMatchObject({ code: 'STORE_FAILED', retryable: false });
      expect((error as CairnError).data.driverMessage).toMatch(/WRONGTYPE/);
      expect(Object.getPrototypeOf(error)).toBe(CairnError.prototype);

      const mine = await connect();
      const closedStore = redisStore({ client: mine, prefix: harness.prefix });
      const ended = new Promise((resolve) => mine.once('end', resolve));
      await mine.quit();
      await ended;
      await expect(closedStore.load('r')).rejects.toMatchObject({
        code: 'STORE_FAILED',
        retryable: false,
      });
    });

    it('never quits the client it was given', async () => {
      const client = await connect();
      const store = redisStore({ client, prefix: harness.prefix });
      await store.create(run('r'));
      const unsubscribe = await store.subscribe!(() => undefined);
      await unsubscribe();
      await store.close();
      expect(client.status).toBe('ready');
      expect(await client.ping()).toBe('PONG');
      client.disconnect();
    });
  });
}
