import {
  LeaseLostError,
  type Checkpoint,
  type Fence,
  type JournalEntry,
  type Lease,
  type StreamChunk,
} from '@cairn/sdk';
import { redisStore, type RedisStore } from '@cairn/store-redis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { noRedisServer, startOwnCluster, type OwnCluster } from './redis-server.js';
import {
  connect,
  createRedisHarness,
  deleteKeys,
  skippedBecause,
  sleep,
  uniquePrefix,
  unreachable,
  type RedisHarness,
} from './support.js';

// Regression tests of issue #13 for what is Redis's own: the holder's deadline and token that its store
// instance adds to each write, and the root that a child's write is checked against (in the write's script on
// a single node, just before it on Cluster). They run on both.

const long = 60_000;
const run = (runId: string) => ({
  runId,
  kind: 'agent',
  name: 'never-twice',
  signature: 's',
  snapshot: { step: 0 },
});
const mark = (seq: number, effectId: string): JournalEntry => ({
  seq,
  type: 'started',
  effectId,
  at: seq,
});
const checkpoint = (snapshot: Checkpoint['snapshot'], journalSeq: number): Checkpoint => ({
  status: 'running',
  signature: 's',
  snapshot,
  journalSeq,
});
const said = (position: number): StreamChunk => ({
  position,
  unit: 'trip',
  part: { type: 'text', text: String(position) },
  at: position,
});
const parentOf = (lease: Lease) => ({ runId: lease.runId, incarnation: lease.incarnation });
/** What a promise settled with: its value, or the error it was rejected with. */
const outcome = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (value) => value,
    (error: unknown) => error,
  );

/** Every fenced write under `fence` is refused with `LeaseLostError` and changes nothing. */
async function expectFencedOut(store: RedisStore, fence: Fence): Promise<void> {
  const streamed = await store.streamPosition(fence.runId);
  for (const write of [
    () => store.appendStream(fence, [said(streamed + 1)]),
    () => store.append(fence, [mark(50, 'stale')]),
    () => store.save(fence, checkpoint({ stale: true }, 50)),
    () => store.updateStatus(fence, { status: 'suspended' }),
  ]) {
    expect(await outcome(write())).toBeInstanceOf(LeaseLostError);
  }
  expect(await store.streamPosition(fence.runId)).toBe(streamed);
}

function neverTwice(open: () => Promise<RedisStore>): void {
  describe('an adopted child run (invariant 13)', () => {
    it("takes its holder's writes while the parent is renewed past the lease end it was adopted with", async () => {
      const a = await open();
      await a.create(run('parent'));
      let parent = (await a.acquire('parent', { owner: 'a', ttlMs: 500 }))!;
      await a.create({ ...run('child'), parent: parentOf(parent) });
      const child = (await a.adopt('child', parent))!;
      for (let i = 0; i < 4; i += 1) {
        await sleep(150);
        parent = await a.renew(parent, 500);
      }
      expect(parent.leaseUntil).toBeGreaterThan(child.leaseUntil + 300);
      // The child's writes carry its root's renewed lease end as their deadline, not the adoption's.
      await a.append(child, [mark(1, 'e1')]);
      await a.save(child, checkpoint({ step: 1 }, 1));
      await a.append(child, [mark(2, 'e2')]);
      await a.appendStream(child, [said(1)]);
      expect(await a.readStream('child')).toEqual([said(1)]);
      const loaded = await a.load('child');
      expect(loaded?.run.snapshot).toEqual({ step: 1 });
      expect(loaded?.journal).toEqual([mark(2, 'e2')]);
    });

    it('refuses the child writes of a holder whose parent was taken over, though its deadline has not passed', async () => {
      const frozen = await open();
      const restarted = await open();
      const bystander = await open();
      await frozen.create(run('parent'));
      const parent = (await frozen.acquire('parent', { owner: 'w', ttlMs: long }))!;
      await frozen.create({ ...run('child'), parent: parentOf(parent) });
      const child = (await frozen.adopt('child', parent))!;
      await frozen.append(child, [mark(1, 'e1')]);
      await frozen.appendStream(child, [said(1)]);
      // The worker restarts under the same owner name and takes the parent back while the frozen process's
      // lease still runs: its child writes carry a current token and deadline, only the root refuses them.
      const taken = (await restarted.acquire('parent', {
        owner: 'w',
        ttlMs: long,
        reclaimOwn: true,
      }))!;
      expect(taken.epoch).toBe(parent.epoch + 1);
      await expectFencedOut(frozen, child);
      // So is the same lease written through a store instance that holds nothing.
      await expectFencedOut(bystander, child);

      const readopted = (await restarted.adopt('child', taken))!;
      await restarted.append(readopted, [mark(2, 'e2')]);
      const loaded = await restarted.load('child');
      expect(loaded?.journal).toEqual([mark(1, 'e1'), mark(2, 'e2')]);
      expect(loaded?.run).toMatchObject({ status: 'running', snapshot: { step: 0 } });
    });

    it('fences a grandchild by its root, and deletes it with the root', async () => {
      const frozen = await open();
      const restarted = await open();
      await frozen.create(run('root'));
      const root = (await frozen.acquire('root', { owner: 'w', ttlMs: long }))!;
      await frozen.create({ ...run('child'), parent: parentOf(root) });
      const child = (await frozen.adopt('child', root))!;
      await frozen.create({ ...run('grandchild'), parent: parentOf(child) });
      const grandchild = (await frozen.adopt('grandchild', child))!;
      expect(grandchild).toMatchObject({ epoch: root.epoch, root: parentOf(root) });
      expect((await frozen.load('grandchild'))?.run).toMatchObject({
        rootRunId: 'root',
        owner: 'w',
        leaseUntil: root.leaseUntil,
      });
      await frozen.append(grandchild, [mark(1, 'e1')]);
      await frozen.appendStream(grandchild, [said(1)]);

      const taken = (await restarted.acquire('root', {
        owner: 'w',
        ttlMs: long,
        reclaimOwn: true,
      }))!;
      await expectFencedOut(frozen, grandchild);
      const child2 = (await restarted.adopt('child', taken))!;
      const grandchild2 = (await restarted.adopt('grandchild', child2))!;
      await restarted.save(grandchild2, checkpoint({ step: 1 }, 1));
      expect((await restarted.load('grandchild'))?.run.snapshot).toEqual({ step: 1 });

      await restarted.release(taken);
      expect(await restarted.delete('root')).toBe(true);
      for (const runId of ['root', 'child', 'grandchild']) {
        expect(await restarted.load(runId), runId).toBeUndefined();
      }
      expect(await restarted.list()).toEqual([]);
    });
  });

  describe('a run deleted and created again (invariant 12)', () => {
    it('refuses, by its incarnation alone, every write, renewal and release made for the old one', async () => {
      const a = await open();
      const c = await open();
      await a.create(run('r'));
      const old = (await a.acquire('r', { owner: 'w', ttlMs: long }))!;
      await a.append(old, [mark(1, 'old')]);
      // Released, so this store instance keeps no token for it: only what the lease names can refuse it.
      await a.release(old);
      expect(await c.delete('r')).toBe(true);
      await c.create({ ...run('r'), snapshot: { incarnation: 2 } });
      // The same id, epoch number and owner name: only the incarnation tells the two claims apart.
      const fresh = (await c.acquire('r', { owner: 'w', ttlMs: long }))!;
      expect(fresh.epoch).toBe(old.epoch);

      await expectFencedOut(a, old);
      await expect(a.renew(old, long)).rejects.toBeInstanceOf(LeaseLostError);
      await a.release(old);
      const loaded = await c.load('r');
      expect(loaded?.run).toMatchObject({
        owner: 'w',
        leaseUntil: fresh.leaseUntil,
        status: 'running',
        snapshot: { incarnation: 2 },
      });
      expect(loaded?.journal).toEqual([]);
      await c.renew(fresh, long);
    });
  });
}

const reason = await unreachable();
if (reason !== undefined) {
  skippedBecause(reason);
} else {
  describe('on a single node', () => {
    let harness: RedisHarness;
    beforeEach(async () => {
      harness = await createRedisHarness('never-twice');
    });
    afterEach(async () => {
      await harness.close();
    });
    neverTwice(() => harness.store());
  });
}

const noServer = noRedisServer();
if (noServer !== undefined) {
  skippedBecause(noServer);
} else {
  describe('on a one-node Redis Cluster', () => {
    let server: OwnCluster;
    let prefix: string;
    beforeAll(async () => {
      server = await startOwnCluster();
    });
    afterAll(async () => {
      await server?.stop();
    });
    beforeEach(() => {
      prefix = uniquePrefix('never-twice-cluster');
    });
    afterEach(async () => {
      const admin = await connect(server.url);
      await deleteKeys(admin, prefix);
      admin.disconnect();
    });
    neverTwice(async () => redisStore({ client: await server.open(), prefix }));
  });
}
