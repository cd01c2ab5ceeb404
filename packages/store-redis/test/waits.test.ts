import { CairnError, RunNotFoundError, type RunWait } from '@cairn/sdk';
import type { RedisStore } from '@cairn/store-redis';
import { expect, it } from 'vitest';
import { indexMismatches, placement } from './index-placement.js';
import { describeOnNodeAndCluster, type OpenedStore } from './node-and-cluster.js';
import { noRedisServer } from './redis-server.js';
import { skippedBecause, sleep } from './support.js';

// Runs that wait and run mailboxes on Redis: a waiting run is claimable exactly when it is due (its time came on
// the claimer's clock, a signal it waits for came, or a cancel was asked), the indexes stay exact through every
// step, and the mailbox takes one signal per idempotency key however many race. On a single node and on a
// one-node Cluster (which refuses a script whose keys span slots).

const long = 60_000;
const definitions = [{ kind: 'agent', name: 'waits' }];
const queued = (runId: string) => ({
  runId,
  kind: 'agent',
  name: 'waits',
  signature: 's',
  snapshot: null,
  status: 'queued' as const,
});

/** Claims `runId` and writes `wait` with its checkpoint, releasing the lease, as the runtime does. */
async function park(store: RedisStore, runId: string, wait: RunWait, signalsConsumed?: number) {
  const lease = (await store.acquire(runId, { owner: 'w', ttlMs: long }))!;
  await store.save(lease, {
    status: 'waiting',
    signature: 's',
    snapshot: { parked: true },
    journalSeq: 0,
    release: true,
    wait,
    ...(signalsConsumed === undefined ? {} : { signalsConsumed }),
  });
  return lease;
}

/** Counts the store's notifications to workers, and waits for the next one. */
async function listen(store: RedisStore) {
  let count = 0;
  let wake: () => void = () => undefined;
  const stop = await store.subscribe!(() => {
    count += 1;
    wake();
  });
  return {
    count: () => count,
    next: (ms = 2_000) =>
      new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), ms);
        wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
      }),
    stop,
  };
}

function waitTests(open: () => Promise<OpenedStore>) {
  it('accepts one of 20 concurrent signals with one idempotency key, seqs in acceptance order', async () => {
    const { store, admin, keys } = await open();
    await store.create(queued('r'));
    const receipts = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.signal('r', { name: 'approve', payload: { i }, idempotencyKey: 'k' }),
      ),
    );
    expect(receipts.filter((receipt) => !receipt.duplicate)).toHaveLength(1);
    expect(new Set(receipts.map((receipt) => receipt.seq))).toEqual(new Set([1]));
    const mailbox = await store.mailbox('r');
    expect(mailbox).toHaveLength(1);
    expect(mailbox[0]).toMatchObject({ seq: 1, name: 'approve', idempotencyKey: 'k' });
    const parallel = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.signal('r', { name: 'n', payload: i })),
    );
    expect(parallel.map((receipt) => receipt.seq).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 2),
    );
    expect((await store.load('r'))?.signals.map((signal) => signal.seq)).toEqual(
      Array.from({ length: 21 }, (_, i) => i + 1),
    );
    expect(await indexMismatches(admin, keys)).toEqual([]);
  });

  it('consumes signals with a checkpoint, never lowers the cursor, and remembers consumed keys', async () => {
    const { store } = await open();
    await store.create(queued('r'));
    expect(await store.mailbox('r')).toEqual([]);
    await store.signal('r', { name: 'a', payload: 1, idempotencyKey: 'one' });
    await store.signal('r', { name: 'b', payload: { x: [1, 'two'] } });
    const lease = (await store.acquire('r', { owner: 'w', ttlMs: long }))!;
    const save = (journalSeq: number, signalsConsumed: number) =>
      store.save(lease, {
        status: 'running',
        signature: 's',
        snapshot: 1,
        journalSeq,
        signalsConsumed,
      });
    await save(0, 1);
    expect(await store.mailbox('r')).toMatchObject([
      { seq: 2, name: 'b', payload: { x: [1, 'two'] } },
    ]);
    await save(1, 0);
    expect((await store.load('r'))?.signals.map((signal) => signal.seq)).toEqual([2]);
    expect(await store.signal('r', { name: 'a', payload: 2, idempotencyKey: 'one' })).toEqual({
      seq: 1,
      duplicate: true,
    });
    await save(2, 99);
    expect(await store.mailbox('r')).toEqual([]);
    // The cursor stopped at the last signal: the next one is still delivered.
    expect(await store.signal('r', { name: 'c', payload: null })).toEqual({
      seq: 3,
      duplicate: false,
    });
    expect((await store.mailbox('r')).map((signal) => signal.seq)).toEqual([3]);
  });

  it('refuses signals to unknown, child and ended runs, and invalid signals, with typed errors', async () => {
    const { store } = await open();
    await expect(store.signal('nobody', { name: 'a', payload: 1 })).rejects.toBeInstanceOf(
      RunNotFoundError,
    );
    expect(await store.mailbox('nobody')).toEqual([]);
    await store.create(queued('root'));
    const lease = (await store.acquire('root', { owner: 'w', ttlMs: long }))!;
    await store.create({ ...queued('root/child'), status: 'running', parent: lease });
    await expect(store.signal('root/child', { name: 'a', payload: 1 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      data: { rootRunId: 'root' },
    });
    await expect(store.signal('root', { name: '', payload: 1 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await store.save(lease, { status: 'completed', signature: 's', snapshot: 1, journalSeq: 0 });
    const ended = await store
      .signal('root', { name: 'a', payload: 1 })
      .catch((error: unknown) => error);
    expect(ended).toBeInstanceOf(CairnError);
    expect(ended).toMatchObject({ code: 'RUN_ENDED' });
  });

  it('refuses a wait not written by a releasing root holder, and a waiting status change', async () => {
    const { store } = await open();
    await store.create(queued('r'));
    const lease = (await store.acquire('r', { owner: 'w', ttlMs: long }))!;
    const wait = { until: null, signals: ['go'] };
    const base = { status: 'waiting' as const, signature: 's', snapshot: 2, journalSeq: 0, wait };
    await expect(store.save(lease, base)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(
      store.save(lease, { ...base, release: true, wait: { until: null, signals: [] } }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(store.updateStatus(lease, { status: 'waiting' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect((await store.load('r'))?.run).toMatchObject({
      status: 'queued',
      snapshot: null,
      wait: null,
    });
  });

  it('makes a run waiting for a time due at that time on the claimer’s clock, not before', async () => {
    const { store, admin, keys } = await open();
    await store.create(queued('r'));
    const until = 5_000_000_000_000;
    const lease = await park(store, 'r', { until, signals: [], detail: { why: 'sleep' } });
    const { run } = (await store.load('r'))!;
    expect(run).toMatchObject({ status: 'waiting', owner: null, leaseUntil: null });
    expect(run.wait).toEqual({ until, signals: [], detail: { why: 'sleep' } });
    expect((await store.list({ status: 'waiting' })).map((each) => each.runId)).toEqual(['r']);
    expect(await store.nextWake(definitions)).toBe(until);
    expect(await store.nextWake([{ kind: 'agent', name: 'other' }])).toBeNull();
    expect(await store.claimable({ limit: 10, definitions })).toEqual([]);
    expect(await store.claimable({ limit: 10, definitions, now: until - 1 })).toEqual([]);
    expect(await store.claimable({ limit: 10, definitions, now: until })).toEqual(['r']);
    expect((await placement(admin, keys, 'r')).claimable).toEqual([]);
    expect(await indexMismatches(admin, keys)).toEqual([]);
    // The runtime claims it and runs on: the wait is gone, and so is its entry.
    const again = (await store.acquire('r', { owner: 'w', ttlMs: long }))!;
    expect(again.epoch).toBe(lease.epoch + 1);
    await store.save(again, { status: 'running', signature: 's', snapshot: 3, journalSeq: 1 });
    expect((await store.load('r'))?.run.wait).toBeNull();
    expect(await store.nextWake(definitions)).toBeNull();
    expect(await indexMismatches(admin, keys)).toEqual([]);
  });

  it('wakes a run waiting for a signal when that signal comes, and tells the workers', async () => {
    const { store, admin, keys } = await open();
    const workers = await listen(store);
    await store.create(queued('r'));
    // Several names, one of them not ASCII: any one of them wakes it.
    await park(store, 'r', { until: null, signals: ['steer', 'approve ✓'] });
    const huge = Number.MAX_SAFE_INTEGER;
    expect(await store.claimable({ limit: 10, definitions, now: huge })).toEqual([]);
    expect(await store.nextWake(definitions)).toBeNull();
    await store.signal('r', { name: 'approve', payload: 1 });
    await store.signal('r', { name: 'steer ', payload: 1 });
    expect(await store.claimable({ limit: 10, definitions, now: huge })).toEqual([]);
    const told = workers.next();
    await store.signal('r', { name: 'approve ✓', payload: { ok: true } });
    expect(await told).toBe(true);
    expect(await store.claimable({ limit: 10, definitions })).toEqual(['r']);
    expect(await indexMismatches(admin, keys)).toEqual([]);
    // Claimed, it is no longer claimable by anyone else until its lease ends.
    const lease = (await store.acquire('r', { owner: 'w', ttlMs: long }))!;
    expect(await store.claimable({ limit: 10, definitions })).toEqual([]);
    await store.save(lease, {
      status: 'running',
      signature: 's',
      snapshot: 4,
      journalSeq: 1,
      signalsConsumed: 3,
    });
    expect(await store.mailbox('r')).toEqual([]);
    expect(await indexMismatches(admin, keys)).toEqual([]);
    await workers.stop();
  });

  it('wakes a run at once for a signal that came before it began to wait, unless consumed', async () => {
    const { store, admin, keys } = await open();
    await store.create(queued('early'));
    await store.create(queued('consumed'));
    await store.signal('early', { name: 'go', payload: 1 });
    await store.signal('consumed', { name: 'go', payload: 1 });
    await park(store, 'early', { until: null, signals: ['go'] });
    await park(store, 'consumed', { until: null, signals: ['go'] }, 1);
    expect(await store.claimable({ limit: 10, definitions })).toEqual(['early']);
    expect(await indexMismatches(admin, keys)).toEqual([]);
  });

  it('makes a waiting run due when a cancel is asked, and tells the workers', async () => {
    const { store, admin, keys } = await open();
    const workers = await listen(store);
    await store.create(queued('r'));
    await park(store, 'r', { until: 9_000_000_000_000, signals: ['never'] });
    expect(await store.claimable({ limit: 10, definitions })).toEqual([]);
    const told = workers.next();
    expect(await store.requestCancel('r')).toBe(true);
    expect(await told).toBe(true);
    expect(await store.claimable({ limit: 10, definitions })).toEqual(['r']);
    expect((await store.load('r'))?.run.cancelRequested).toBe(true);
    expect(await indexMismatches(admin, keys)).toEqual([]);
    const lease = (await store.acquire('r', { owner: 'w', ttlMs: long }))!;
    expect(lease.cancelRequested).toBe(true);
    await store.updateStatus(lease, { status: 'cancelled' });
    expect((await store.load('r'))?.run).toMatchObject({ status: 'cancelled', wait: null });
    expect(await store.nextWake(definitions)).toBeNull();
    expect(await indexMismatches(admin, keys)).toEqual([]);
    await workers.stop();
  });

  it('never offers a run that is not due, and keeps every run exactly indexed', async () => {
    const { store, admin, keys } = await open();
    const ids = Array.from({ length: 30 }, (_, i) => `w${i}`);
    for (const runId of ids) await store.create(queued(runId));
    for (const [i, runId] of ids.entries())
      await park(
        store,
        runId,
        i % 3 === 0 ? { until: 1_000 + i, signals: [] } : { until: null, signals: ['s'] },
      );
    await store.create({
      ...queued('scheduled'),
      status: 'waiting',
      wait: { until: 500, signals: [] },
    });
    await store.create(queued('plain'));
    expect(await indexMismatches(admin, keys)).toEqual([]);
    expect(await store.claimable({ limit: 100, definitions, now: 999 })).toEqual([
      'scheduled',
      'plain',
    ]);
    expect(await store.nextWake(definitions)).toBe(500);
    // Whatever the reading, nothing not due by its signals is offered, and no reading fails the script.
    expect(await store.claimable({ limit: 100, definitions, now: Number.NaN })).toEqual(['plain']);
    expect(await store.claimable({ limit: 100, definitions, now: Infinity })).toHaveLength(12);
    const due = await store.claimable({ limit: 100, definitions, now: 2_000 });
    expect(new Set(due)).toEqual(
      new Set(['scheduled', 'plain', ...ids.filter((_, i) => i % 3 === 0)]),
    );
    expect((await store.list({ status: 'waiting' })).map((run) => run.runId)).toEqual([
      ...ids,
      'scheduled',
    ]);
  });

  it('deletes the mailbox with the run: the id created again starts empty, its keys forgotten', async () => {
    const { store, admin, keys } = await open();
    await store.create(queued('r'));
    await store.signal('r', { name: 'a', payload: 1, idempotencyKey: 'k' });
    await park(store, 'r', { until: 7, signals: ['a'] });
    expect(await store.delete('r')).toBe(true);
    expect(await admin.exists(keys.run('r').mailbox)).toBe(0);
    expect(await indexMismatches(admin, keys)).toEqual([]);
    await store.create(queued('r'));
    expect(await store.mailbox('r')).toEqual([]);
    expect(await store.signal('r', { name: 'a', payload: 2, idempotencyKey: 'k' })).toEqual({
      seq: 1,
      duplicate: false,
    });
    expect(await store.nextWake(definitions)).toBeNull();
    // Pruning a run in a final status takes its mailbox too.
    const lease = (await store.acquire('r', { owner: 'w', ttlMs: long }))!;
    await store.save(lease, {
      status: 'failed',
      signature: 's',
      snapshot: 1,
      journalSeq: 0,
      release: true,
    });
    await sleep(5);
    expect(await store.prune({ olderThan: Date.now() + 60_000 })).toBe(1);
    expect(await admin.exists(keys.run('r').mailbox)).toBe(0);
  });
}

const reason = noRedisServer();

if (reason !== undefined) {
  skippedBecause(reason);
} else {
  describeOnNodeAndCluster('waits', waitTests);
}
