import { LeaseLostError, type Checkpoint, type Lease } from '@cairn/sdk';
import type { RedisStore } from '@cairn/store-redis';
import { expect, it } from 'vitest';
// The waits and claimable sets are read past the store: that a refused write leaves them be is what is checked.
import { bucketOf } from '../src/keys.js';
import { indexMismatches } from './index-placement.js';
import { describeOnNodeAndCluster, type OpenedStore } from './node-and-cluster.js';
import { noRedisServer } from './redis-server.js';
import { listedByStatus } from './status-indexes.js';
import { skippedBecause } from './support.js';

// What a save answers on Redis (a SaveReceipt): whether it wrote, and whether the mailbox holds a signal above
// the consumed cursor after it; and a checkpoint with `unlessMail` refused, writing nothing, while it does. On a
// single node and on a one-node Cluster.

const long = 60_000;
const queued = (runId: string) => ({
  runId,
  kind: 'agent',
  name: 'receipts',
  signature: 's',
  snapshot: { step: 0 },
  status: 'queued' as const,
});
const step = (journalSeq: number, more: Partial<Checkpoint> = {}): Checkpoint => ({
  status: 'running',
  signature: 's',
  snapshot: { step: journalSeq },
  journalSeq,
  ...more,
});

/**
 * The run's hash as Redis holds it (every field), its lease key, its scores in its bucket's claimable and waits
 * sets, and the store's view of it and of the status indexes.
 */
async function stateOf(opened: OpenedStore, runId: string) {
  const { store, admin, keys } = opened;
  const run = keys.run(runId);
  return {
    hash: await admin.hgetall(run.run),
    lease: await admin.get(run.lease),
    claimable: await admin.zscore(keys.claimable(bucketOf(runId)), runId),
    waits: await admin.zscore(keys.waits(bucketOf(runId)), runId),
    loaded: await store.load(runId),
    listed: await listedByStatus(store),
  };
}

async function claim(store: RedisStore, runId: string): Promise<Lease> {
  return (await store.acquire(runId, { owner: 'w', ttlMs: long }))!;
}

function receiptTests(open: () => Promise<OpenedStore>) {
  it('says mail false with an empty mailbox, true once a signal came, false once a save consumed it', async () => {
    const { store, admin, keys } = await open();
    await store.create(queued('r'));
    const lease = await claim(store, 'r');
    expect(await store.save(lease, step(1))).toEqual({ written: true, mail: false });
    await store.signal('r', { name: 'a', payload: 1 });
    expect(await store.save(lease, step(2))).toEqual({ written: true, mail: true });
    // A cursor below the last signal leaves mail.
    await store.signal('r', { name: 'b', payload: 2 });
    expect(await store.save(lease, step(3, { signalsConsumed: 1 }))).toEqual({
      written: true,
      mail: true,
    });
    expect(await store.save(lease, step(4, { signalsConsumed: 2 }))).toEqual({
      written: true,
      mail: false,
    });
    // A cursor past the last signal consumes what is there and reports none.
    await store.signal('r', { name: 'c', payload: 3 });
    expect(await store.save(lease, step(5, { signalsConsumed: 99 }))).toEqual({
      written: true,
      mail: false,
    });
    expect(await store.mailbox('r')).toEqual([]);
    expect(await indexMismatches(admin, keys)).toEqual([]);
  });

  it('refuses a checkpoint with unlessMail while mail is unread, writing nothing; one consuming it completes the run', async () => {
    const opened = await open();
    const { store, admin, keys } = opened;
    await store.create(queued('r'));
    const lease = await claim(store, 'r');
    expect(await store.save(lease, step(1, { unlessMail: true }))).toEqual({
      written: true,
      mail: false,
    });
    await store.signal('r', { name: 'a', payload: 1 });
    await store.signal('r', { name: 'b', payload: 2 });
    const before = await stateOf(opened, 'r');
    const final = step(2, { status: 'completed', output: { done: true }, unlessMail: true });
    expect(await store.save(lease, final)).toEqual({ written: false, mail: true });
    // Consuming only part of the mail is refused too.
    expect(await store.save(lease, { ...final, signalsConsumed: 1 })).toEqual({
      written: false,
      mail: true,
    });
    const after = await stateOf(opened, 'r');
    expect(after).toEqual(before);
    expect(after.loaded!.run).toMatchObject({
      status: 'running',
      owner: 'w',
      snapshot: { step: 1 },
    });
    expect(after.loaded!.signals.map((signal) => signal.seq)).toEqual([1, 2]);
    expect(await indexMismatches(admin, keys)).toEqual([]);

    expect(await store.save(lease, { ...final, signalsConsumed: 2 })).toEqual({
      written: true,
      mail: false,
    });
    const done = (await store.load('r'))!;
    expect(done.run).toMatchObject({ status: 'completed', output: { done: true } });
    expect(done.signals).toEqual([]);
    expect((await listedByStatus(store)).get('completed')).toEqual(['r']);
    expect(await indexMismatches(admin, keys)).toEqual([]);
  });

  it('answers a retried final write written true, mail false', async () => {
    const { store, admin, keys } = await open();
    await store.create(queued('r'));
    const lease = await claim(store, 'r');
    const final = step(1, { status: 'completed', output: 1 });
    expect(await store.save(lease, final)).toEqual({ written: true, mail: false });
    expect(await store.save(lease, final)).toEqual({ written: true, mail: false });
    expect(await store.save(lease, { ...final, unlessMail: true })).toEqual({
      written: true,
      mail: false,
    });
    expect((await store.load('r'))!.run).toMatchObject({ status: 'completed', output: 1 });
    expect(await indexMismatches(admin, keys)).toEqual([]);
  });

  it('keeps the lease of a refused checkpoint with unlessMail and release', async () => {
    const opened = await open();
    const { store, admin, keys } = opened;
    await store.create(queued('r'));
    const lease = (await store.acquire('r', { owner: 'w', ttlMs: long }))!;
    await store.signal('r', { name: 'a', payload: 1 });
    const before = await stateOf(opened, 'r');
    const final = step(1, { status: 'completed', release: true, unlessMail: true });
    expect(await store.save(lease, final)).toEqual({ written: false, mail: true });
    expect(await stateOf(opened, 'r')).toEqual(before);
    expect(before.lease).not.toBeNull();
    const renewed = await store.renew(lease, long);
    expect(renewed.epoch).toBe(lease.epoch);
    expect(await store.save(renewed, { ...final, signalsConsumed: 1 })).toEqual({
      written: true,
      mail: false,
    });
    const done = (await store.load('r'))!.run;
    expect(done).toMatchObject({ status: 'completed', owner: null });
    expect(await indexMismatches(admin, keys)).toEqual([]);
  });

  it('refuses a fenced-out checkpoint with unlessMail as before, mail or not', async () => {
    const { store } = await open();
    await store.create(queued('r'));
    const old = await claim(store, 'r');
    await store.release(old);
    await claim(store, 'r');
    const final = step(1, { status: 'completed', unlessMail: true });
    await expect(store.save(old, final)).rejects.toBeInstanceOf(LeaseLostError);
    await store.signal('r', { name: 'a', payload: 1 });
    await expect(store.save(old, final)).rejects.toBeInstanceOf(LeaseLostError);
    expect((await store.load('r'))!.run).toMatchObject({ status: 'queued', owner: 'w' });
  });

  it('refuses a wait with unlessMail while mail is unread: no wait, no release, no waits entry', async () => {
    const opened = await open();
    const { store, admin, keys } = opened;
    await store.create(queued('r'));
    const lease = await claim(store, 'r');
    await store.signal('r', { name: 'other', payload: 1 });
    const before = await stateOf(opened, 'r');
    const wait = { until: Date.now() + long, signals: ['go'] };
    const parked = step(1, { status: 'waiting', release: true, wait, unlessMail: true });
    expect(await store.save(lease, parked)).toEqual({ written: false, mail: true });
    const after = await stateOf(opened, 'r');
    expect(after).toEqual(before);
    expect(after.loaded!.run).toMatchObject({ status: 'queued', owner: 'w', wait: null });
    expect(after.waits).toBeNull();
    expect(await indexMismatches(admin, keys)).toEqual([]);
    // Consuming the mail, the wait is written and the lease given up.
    expect(await store.save(lease, { ...parked, signalsConsumed: 1 })).toEqual({
      written: true,
      mail: false,
    });
    const waiting = await stateOf(opened, 'r');
    expect(waiting.loaded!.run).toMatchObject({ status: 'waiting', owner: null, wait });
    expect(waiting.waits).not.toBeNull();
    expect(await indexMismatches(admin, keys)).toEqual([]);
  });
}

const reason = noRedisServer();

if (reason !== undefined) {
  skippedBecause(reason);
} else {
  describeOnNodeAndCluster('save-receipt', receiptTests);
}
