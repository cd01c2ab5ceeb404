import { CairnError, RunNotFoundError, type Lease, type RunWait } from '@cairn/sdk';
import type { PgStore } from '@cairn/store-pg';
import { describe, expect, it } from 'vitest';
import { usePgHarness } from './support.js';

const opened = usePgHarness('cairn_waits');
const definitions = [{ kind: 'agent', name: 'waiter' }];
const owner = 'w';
let runs = 0;

/** A new root run of `definitions`, claimed, then parked with `wait` by its holder; its id. */
async function waitingRun(store: PgStore, wait: RunWait, signalsConsumed?: number) {
  const runId = `wait-${(runs += 1)}`;
  await store.create({ runId, kind: 'agent', name: 'waiter', signature: 's', snapshot: null });
  const lease = (await store.acquire(runId, { owner, ttlMs: 60_000 }))!;
  await park(store, lease, wait, signalsConsumed);
  return runId;
}

function park(store: PgStore, lease: Lease, wait: RunWait, signalsConsumed?: number) {
  return store.save(lease, {
    status: 'waiting',
    signature: 's',
    snapshot: { parked: true },
    journalSeq: 0,
    release: true,
    wait,
    ...(signalsConsumed === undefined ? {} : { signalsConsumed }),
  });
}

/** The ids a claim at `now` takes of `among` (other tests' runs are left alone: they are not due for them). */
async function claimAt(store: PgStore, now: number | undefined, among: readonly string[]) {
  const ids = await store.claimable({
    limit: 100,
    definitions,
    ...(now === undefined ? {} : { now }),
  });
  const leases = await store.claim!({
    limit: 100,
    definitions,
    owner,
    ttlMs: 60_000,
    skip: ids.filter((id) => !among.includes(id)),
    ...(now === undefined ? {} : { now }),
  });
  const claimed = leases.filter((lease) => among.includes(lease.runId));
  // What claimable said is what claim took.
  expect(claimed.map((lease) => lease.runId)).toEqual(ids.filter((id) => among.includes(id)));
  return claimed;
}

describe('a waiting run', () => {
  it('keeps its wait, holds no lease, and is claimed only once its time came on the claimer’s clock', async () => {
    const { harness } = opened();
    const store = harness.store();
    const wait = { until: 5_000, signals: ['approve'], detail: { tool: 'refund', amount: 3 } };
    const runId = await waitingRun(store, wait);
    const loaded = (await store.load(runId))!;
    expect(loaded.run).toMatchObject({ status: 'waiting', wait, owner: null, leaseUntil: null });
    expect(loaded.signals).toEqual([]);
    expect((await store.list({ status: 'waiting' })).map((run) => run.runId)).toContain(runId);
    expect(await store.nextWake(definitions)).toBe(5_000);
    expect(await store.nextWake([{ kind: 'agent', name: 'other' }])).toBeNull();

    expect(await claimAt(store, 4_999, [runId])).toEqual([]);
    const [lease] = await claimAt(store, 5_000, [runId]);
    expect(lease?.claimed?.run).toMatchObject({ status: 'waiting', wait, owner });
    // Held now: not claimed again, and no longer a wake-up to wait for.
    expect(await claimAt(store, 9_000, [runId])).toEqual([]);
    // Its holder moves it on: the wait is cleared.
    await store.save(lease!, { status: 'running', signature: 's', snapshot: {}, journalSeq: 0 });
    expect((await store.load(runId))?.run.wait).toBeNull();
    await store.release(lease!);
  });

  it('is claimed at the database’s clock when the claimer gives none', async () => {
    const store = opened().harness.store();
    const past = await waitingRun(store, { until: Date.now() - 1_000, signals: [] });
    const future = await waitingRun(store, { until: Date.now() + 3_600_000, signals: [] });
    const claimed = await claimAt(store, undefined, [past, future]);
    expect(claimed.map((lease) => lease.runId)).toEqual([past]);
  });

  it('is woken by a signal it waits for, not by another; the claim hands over the mailbox', async () => {
    const store = opened().harness.store();
    const runId = await waitingRun(store, { until: null, signals: ['approve'] });
    expect(await store.signal(runId, { name: 'note', payload: 1 })).toEqual({
      seq: 1,
      duplicate: false,
    });
    expect(await claimAt(store, 1e15, [runId])).toEqual([]);
    await store.signal(runId, { name: 'approve', payload: { by: 'ann' }, idempotencyKey: 'k' });
    const [lease] = await claimAt(store, 0, [runId]);
    expect(lease?.claimed?.signals).toEqual([
      { seq: 1, name: 'note', payload: 1, idempotencyKey: null, at: expect.any(Number) },
      {
        seq: 2,
        name: 'approve',
        payload: { by: 'ann' },
        idempotencyKey: 'k',
        at: expect.any(Number),
      },
    ]);
    expect(Math.abs(lease!.claimed!.signals[0]!.at - Date.now())).toBeLessThan(60_000);
    await store.release(lease!);
  });

  it('is due at once when a signal it waits for came before the wait', async () => {
    const store = opened().harness.store();
    const runId = `early-${(runs += 1)}`;
    await store.create({ runId, kind: 'agent', name: 'waiter', signature: 's', snapshot: null });
    const lease = (await store.acquire(runId, { owner, ttlMs: 60_000 }))!;
    await store.signal(runId, { name: 'approve', payload: null });
    await park(store, lease, { until: null, signals: ['approve'] });
    expect((await claimAt(store, 0, [runId])).map((l) => l.runId)).toEqual([runId]);
  });

  it('is not woken by a signal its checkpoint consumed; consumed signals leave the mailbox, keys stay', async () => {
    const store = opened().harness.store();
    const runId = `consumed-${(runs += 1)}`;
    await store.create({ runId, kind: 'agent', name: 'waiter', signature: 's', snapshot: null });
    const lease = (await store.acquire(runId, { owner, ttlMs: 60_000 }))!;
    await store.signal(runId, { name: 'approve', payload: 1, idempotencyKey: 'first' });
    await store.signal(runId, { name: 'approve', payload: 2 });
    await store.signal(runId, { name: 'note', payload: 3 });
    await park(store, lease, { until: null, signals: ['approve'] }, 2);
    expect((await store.mailbox(runId)).map((s) => s.seq)).toEqual([3]);
    expect(await claimAt(store, 0, [runId])).toEqual([]);
    // A key consumed is still remembered; the cursor never goes past the last signal nor down.
    expect(
      await store.signal(runId, { name: 'approve', payload: 9, idempotencyKey: 'first' }),
    ).toEqual({ seq: 1, duplicate: true });
    const [again] = await claimAt(store, 0, [runId]);
    expect(again).toBeUndefined();
    const next = (await store.acquire(runId, { owner, ttlMs: 60_000 }))!;
    await park(store, next, { until: null, signals: ['approve'] }, 1);
    expect((await store.mailbox(runId)).map((s) => s.seq)).toEqual([3]);
    const woken = (await store.acquire(runId, { owner, ttlMs: 60_000 }))!;
    await park(store, woken, { until: null, signals: ['note'] }, 99);
    expect(await store.mailbox(runId)).toEqual([]);
    expect((await store.signal(runId, { name: 'note', payload: 4 })).seq).toBe(4);
    expect((await store.load(runId))?.signals.map((s) => s.seq)).toEqual([4]);
  });

  it('is claimed once a client asks to cancel it', async () => {
    const store = opened().harness.store();
    const runId = await waitingRun(store, { until: 1e15, signals: ['approve'] });
    expect(await claimAt(store, 0, [runId])).toEqual([]);
    expect(await store.requestCancel(runId)).toBe(true);
    const [lease] = await claimAt(store, 0, [runId]);
    expect(lease).toMatchObject({ runId, cancelRequested: true });
    await store.updateStatus(lease!, { status: 'cancelled' });
    expect((await store.load(runId))?.run).toMatchObject({ status: 'cancelled', wait: null });
  });

  it('tells subscribed workers when it starts waiting and when a cancel request wakes it', async () => {
    const store = opened().harness.store();
    let heard = 0;
    const unsubscribe = await store.subscribe!(() => (heard += 1));
    try {
      const runId = await waitingRun(store, { until: 1e15, signals: [] });
      await expect.poll(() => heard, { timeout: 2_000 }).toBeGreaterThanOrEqual(2); // created, waiting
      const before = heard;
      await store.requestCancel(runId);
      await expect.poll(() => heard, { timeout: 2_000 }).toBeGreaterThan(before);
    } finally {
      await unsubscribe();
    }
  });

  it('starts waiting from a batch of checkpoints, each fenced on its own', async () => {
    const store = opened().harness.store();
    const ids = Array.from({ length: 12 }, () => `batch-${(runs += 1)}`);
    for (const runId of ids)
      await store.create({ runId, kind: 'agent', name: 'waiter', signature: 's', snapshot: null });
    const leases = await Promise.all(ids.map((id) => store.acquire(id, { owner, ttlMs: 60_000 })));
    const results = await Promise.allSettled(
      leases.map((lease, n) =>
        park(store, n === 3 ? { ...lease!, epoch: 99 } : lease!, { until: n, signals: [] }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(
      ids.map((_, n) => (n === 3 ? 'rejected' : 'fulfilled')),
    );
    const claimed = await claimAt(store, 100, ids);
    expect(claimed.map((lease) => lease.runId)).toEqual(ids.filter((_, n) => n !== 3));
  });

  it('can be created waiting (a scheduled start)', async () => {
    const store = opened().harness.store();
    const runId = `scheduled-${(runs += 1)}`;
    const { run } = await store.create({
      runId,
      kind: 'agent',
      name: 'waiter',
      signature: 's',
      snapshot: null,
      status: 'waiting',
      wait: { until: 7_000.5, signals: [] },
    });
    expect(run).toMatchObject({ status: 'waiting', wait: { until: 7_000.5, signals: [] } });
    expect(await claimAt(store, 7_000, [runId])).toEqual([]);
    expect((await claimAt(store, 7_001, [runId])).map((l) => l.runId)).toEqual([runId]);
  });
});

describe('refusals', () => {
  it('refuses waits written otherwise than by the run’s own holder giving it up, writing nothing', async () => {
    const store = opened().harness.store();
    const runId = `refused-${(runs += 1)}`;
    await store.create({ runId, kind: 'agent', name: 'waiter', signature: 's', snapshot: null });
    const lease = (await store.acquire(runId, { owner, ttlMs: 60_000 }))!;
    const base = { status: 'waiting', signature: 's', snapshot: {}, journalSeq: 0 } as const;
    for (const checkpoint of [
      { ...base, wait: { until: 1, signals: [] } },
      { ...base, release: true, wait: { until: null, signals: [] } },
      { ...base, release: true },
    ]) {
      await expect(store.save(lease, checkpoint)).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
    }
    await expect(store.updateStatus(lease, { status: 'waiting' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect((await store.load(runId))?.run).toMatchObject({ status: 'running', owner });
    await expect(
      store.create({
        runId: 'never',
        kind: 'a',
        name: 'b',
        signature: 's',
        snapshot: null,
        status: 'waiting',
      }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await store.release(lease);
  });

  it('refuses signals to unknown, ended and child runs, and invalid signals, with typed errors', async () => {
    const store = opened().harness.store();
    const root = `root-${(runs += 1)}`;
    await store.create({
      runId: root,
      kind: 'agent',
      name: 'waiter',
      signature: 's',
      snapshot: null,
    });
    const { run: parent } = (await store.create({
      runId: `${root}-child`,
      kind: 'agent',
      name: 'waiter',
      signature: 's',
      snapshot: null,
      parent: { runId: root, incarnation: (await store.load(root))!.run.incarnation },
    }))!;
    await expect(store.signal('nobody', { name: 'x', payload: 1 })).rejects.toBeInstanceOf(
      RunNotFoundError,
    );
    await expect(store.signal(parent.runId, { name: 'x', payload: 1 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      data: { runId: parent.runId, rootRunId: root },
    });
    for (const bad of [
      { name: '', payload: 1 },
      { name: 'x', payload: 1, idempotencyKey: '' },
    ]) {
      await expect(store.signal(root, bad)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    const lease = (await store.acquire(root, { owner, ttlMs: 60_000 }))!;
    await store.save(lease, {
      status: 'completed',
      signature: 's',
      snapshot: {},
      journalSeq: 0,
      release: true,
    });
    const ended = await store.signal(root, { name: 'x', payload: 1 }).catch((e: unknown) => e);
    expect(ended).toBeInstanceOf(CairnError);
    expect(ended).toMatchObject({ code: 'RUN_ENDED', data: { runId: root, status: 'completed' } });
    expect(await store.mailbox('nobody')).toEqual([]);
  });

  it('forgets the mailbox and its keys with the run: a run created again starts empty', async () => {
    const store = opened().harness.store();
    const runId = `again-${(runs += 1)}`;
    const create = () =>
      store.create({ runId, kind: 'agent', name: 'waiter', signature: 's', snapshot: null });
    await create();
    await store.signal(runId, { name: 'x', payload: 1, idempotencyKey: 'k' });
    expect(await store.delete(runId)).toBe(true);
    await create();
    expect(await store.mailbox(runId)).toEqual([]);
    expect(await store.signal(runId, { name: 'x', payload: 2, idempotencyKey: 'k' })).toEqual({
      seq: 1,
      duplicate: false,
    });
    const { sql, harness } = opened();
    const left = await sql.unsafe(`select count(*)::int as n from "${harness.schema}".signals s
      where not exists (select 1 from "${harness.schema}".runs r where r.created_seq = s.run_seq)`);
    expect(left[0]!.n).toBe(0);
  });
});
