import { expect, it, vi } from 'vitest';
import {
  CairnError,
  LeaseLostError,
  RunNotFoundError,
  type DurableStore,
  type Lease,
  type RunWait,
} from '@cairn/sdk';
import { checkpoint, longTtlMs, newRun, type ConformanceContext } from './context.js';

const definitions = [{ kind: 'agent', name: 'conformance' }];
/** Wait times are on the claimer's clock: every test names its `now`. */
const t0 = 1_000_000;

/** A run held by `owner`, ready to write. */
async function heldRun(store: DurableStore, owner = 'a'): Promise<Lease> {
  const init = newRun();
  await store.create(init);
  return (await store.acquire(init.runId, { owner, ttlMs: longTtlMs }))!;
}

/** The holder stores `wait` and gives the run up, as the runtime does. */
async function waitFor(
  store: DurableStore,
  lease: Lease,
  wait: RunWait,
  extra = {},
): Promise<void> {
  await store.save(lease, checkpoint(1, { status: 'waiting', wait, release: true, ...extra }));
}

async function claimableAt(store: DurableStore, now: number): Promise<string[]> {
  return store.claimable({ limit: 100, definitions, now });
}

function code(error: unknown): string | undefined {
  return error instanceof CairnError ? error.code : undefined;
}

/** Registers waiting, waking, the mailbox and idempotent signals. */
export function waitTests(ctx: ConformanceContext): void {
  it('keeps a wait and gives the lease up in the same write: the run holds nothing while it waits', async () => {
    const a = await ctx.store();
    const b = await ctx.store();
    const lease = await heldRun(a);
    const wait: RunWait = {
      until: t0 + 5_000,
      signals: ['cairn.approval'],
      detail: { approvals: [{ callId: 'c1', tool: 'refund', args: { cents: 120_000 } }] },
    };
    await waitFor(a, lease, wait);
    const { run } = (await b.load(lease.runId))!;
    expect(run).toMatchObject({ status: 'waiting', wait, owner: null, leaseUntil: null });
    expect((await b.list({ status: 'waiting' })).map((r) => r.runId)).toEqual([lease.runId]);
    // Nobody holds it: a resume elsewhere claims it at once (and the runtime decides it is not due).
    const next = await b.acquire(lease.runId, { owner: 'b', ttlMs: longTtlMs });
    expect(next?.epoch).toBe(lease.epoch + 1);
    expect(next?.claimed?.run.wait ?? (await b.load(lease.runId))?.run.wait).toEqual(wait);
  });

  it('refuses a wait that does not release the lease, names no wait, or is written under a lost lease', async () => {
    const a = await ctx.store();
    const lease = await heldRun(a);
    const wait: RunWait = { until: t0, signals: [] };
    await expect(a.save(lease, checkpoint(1, { status: 'waiting', wait }))).rejects.toSatisfy(
      (e) => code(e) === 'INVALID_ARGUMENT',
    );
    await expect(
      a.save(lease, checkpoint(1, { status: 'waiting', release: true })),
    ).rejects.toSatisfy((e) => code(e) === 'INVALID_ARGUMENT');
    await expect(a.updateStatus(lease, { status: 'waiting' })).rejects.toSatisfy(
      (e) => code(e) === 'INVALID_ARGUMENT',
    );
    await expect(waitFor(a, { ...lease, epoch: lease.epoch + 1 }, wait)).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    expect((await a.load(lease.runId))?.run).toMatchObject({
      status: 'running',
      wait: null,
      owner: 'a',
    });
  });

  it('is claimed once its time comes on the claimer’s clock, and not before', async () => {
    const a = await ctx.store();
    const lease = await heldRun(a);
    await waitFor(a, lease, { until: t0 + 1_000, signals: ['go'] });
    expect(await claimableAt(a, t0)).toEqual([]);
    if (a.claim !== undefined) {
      const early = { limit: 10, definitions, owner: 'w', ttlMs: longTtlMs, now: t0 + 999 };
      expect(await a.claim(early)).toEqual([]);
    }
    expect(await claimableAt(a, t0 + 1_000)).toEqual([lease.runId]);
    if (a.claim !== undefined) {
      const [claimed] = await a.claim({
        limit: 10,
        definitions,
        owner: 'w',
        ttlMs: longTtlMs,
        now: t0 + 1_000,
      });
      expect(claimed?.runId).toBe(lease.runId);
      expect(claimed?.claimed?.run).toMatchObject({ status: 'waiting', owner: 'w' });
      expect(await claimableAt(a, t0 + 2_000)).toEqual([]);
    }
  });

  it('wakes for a signal of a name it waits for, and only for such a signal', async () => {
    const a = await ctx.store();
    const lease = await heldRun(a);
    await waitFor(a, lease, { until: null, signals: ['payment.settled'] });
    expect(await claimableAt(a, t0 + 10 ** 12)).toEqual([]);
    await a.signal(lease.runId, { name: 'cairn.follow-up', payload: { text: 'also a hotel' } });
    expect(await claimableAt(a, t0 + 10 ** 12)).toEqual([]);
    await a.signal(lease.runId, { name: 'payment.settled', payload: { id: 'p-1' } });
    expect(await claimableAt(a, t0)).toEqual([lease.runId]);
    const loaded = (await a.load(lease.runId))!;
    expect(loaded.signals.map((s) => [s.seq, s.name])).toEqual([
      [1, 'cairn.follow-up'],
      [2, 'payment.settled'],
    ]);
  });

  it('keeps a signal that arrived before the wait began, and is due the moment it waits', async () => {
    const a = await ctx.store();
    const b = await ctx.store();
    const lease = await heldRun(a);
    expect(
      await b.signal(lease.runId, { name: 'payment.settled', payload: { id: 'p-1' } }),
    ).toEqual({
      seq: 1,
      duplicate: false,
    });
    await waitFor(a, lease, { until: null, signals: ['payment.settled'] });
    expect(await claimableAt(b, t0)).toEqual([lease.runId]);
    expect((await b.mailbox(lease.runId)).map((s) => s.payload)).toEqual([{ id: 'p-1' }]);
  });

  it('wakes a waiting run whose cancel a client asked, so a worker can cancel it', async () => {
    const a = await ctx.store();
    const lease = await heldRun(a);
    await waitFor(a, lease, { until: null, signals: ['never'] });
    expect(await a.requestCancel(lease.runId)).toBe(true);
    expect(await claimableAt(a, t0)).toEqual([lease.runId]);
  });

  it('hands the mailbox over in order and consumes it only with a fenced checkpoint', async () => {
    const a = await ctx.store();
    const b = await ctx.store();
    const lease = await heldRun(a);
    for (const text of ['one', 'two', 'three'])
      await b.signal(lease.runId, { name: 'cairn.follow-up', payload: { text } });
    const loaded = (await a.load(lease.runId))!;
    expect(loaded.signals.map((s) => [s.seq, s.payload])).toEqual([
      [1, { text: 'one' }],
      [2, { text: 'two' }],
      [3, { text: 'three' }],
    ]);
    expect(loaded.signals.every((s) => typeof s.at === 'number' && s.idempotencyKey === null)).toBe(
      true,
    );
    await a.save(lease, checkpoint(2, { signalsConsumed: 2 }));
    expect((await b.mailbox(lease.runId)).map((s) => s.seq)).toEqual([3]);
    // A stale holder consumes nothing; a lower cursor brings nothing back.
    await expect(
      a.save({ ...lease, epoch: lease.epoch + 1 }, checkpoint(3, { signalsConsumed: 3 })),
    ).rejects.toBeInstanceOf(LeaseLostError);
    await a.save(lease, checkpoint(3, { signalsConsumed: 1 }));
    expect((await b.mailbox(lease.runId)).map((s) => s.seq)).toEqual([3]);
    // The claim hands it over too.
    await waitFor(a, lease, { until: null, signals: ['cairn.follow-up'] }, { signalsConsumed: 2 });
    const next = await b.acquire(lease.runId, { owner: 'b', ttlMs: longTtlMs });
    const handed = next?.claimed?.signals ?? (await b.load(lease.runId))!.signals;
    expect(handed.map((s) => s.seq)).toEqual([3]);
  });

  it('accepts a key once, whether the first signal was consumed or not, and once among concurrent sends', async () => {
    const a = await ctx.store();
    const b = await ctx.store();
    const lease = await heldRun(a);
    const sends = Array.from({ length: 12 }, (_, i) =>
      (i % 2 === 0 ? a : b).signal(lease.runId, {
        name: 'payment.settled',
        payload: { by: `person-${i}` },
        idempotencyKey: 'approve-c1',
      }),
    );
    const receipts = await Promise.all(sends);
    expect(receipts.filter((r) => !r.duplicate)).toHaveLength(1);
    expect(new Set(receipts.map((r) => r.seq))).toEqual(new Set([1]));
    expect(await a.mailbox(lease.runId)).toHaveLength(1);
    await a.save(lease, checkpoint(2, { signalsConsumed: 1 }));
    expect(
      await b.signal(lease.runId, {
        name: 'payment.settled',
        payload: {},
        idempotencyKey: 'approve-c1',
      }),
    ).toEqual({ seq: 1, duplicate: true });
    expect(await b.mailbox(lease.runId)).toEqual([]);
    expect(
      await b.signal(lease.runId, {
        name: 'payment.settled',
        payload: {},
        idempotencyKey: 'approve-c2',
      }),
    ).toEqual({ seq: 2, duplicate: false });
  });

  it('refuses signals to unknown, finished and child runs, and malformed signals, with typed errors', async () => {
    const a = await ctx.store();
    await expect(a.signal('run-missing', { name: 'x', payload: null })).rejects.toBeInstanceOf(
      RunNotFoundError,
    );
    const lease = await heldRun(a);
    await expect(a.signal(lease.runId, { name: '', payload: null })).rejects.toSatisfy(
      (e) => code(e) === 'INVALID_ARGUMENT',
    );
    await expect(a.signal(lease.runId, { name: 'x'.repeat(201), payload: null })).rejects.toSatisfy(
      (e) => code(e) === 'INVALID_ARGUMENT',
    );
    const child = newRun({ parent: { runId: lease.runId, incarnation: lease.incarnation } });
    await a.create(child);
    await expect(a.signal(child.runId, { name: 'x', payload: null })).rejects.toSatisfy(
      (e) => code(e) === 'INVALID_ARGUMENT',
    );
    await a.save(lease, checkpoint(9, { status: 'completed', output: 'done', release: true }));
    await expect(a.signal(lease.runId, { name: 'x', payload: null })).rejects.toSatisfy(
      (e) => code(e) === 'RUN_ENDED',
    );
    expect(await a.mailbox(lease.runId)).toEqual([]);
  });

  it('starts a scheduled run at its time and tells workers when the next one is due', async () => {
    const a = await ctx.store();
    expect(await a.nextWake(definitions)).toBeNull();
    const later = newRun({ status: 'waiting', wait: { until: t0 + 7_000, signals: [] } });
    const sooner = newRun({ status: 'waiting', wait: { until: t0 + 3_000, signals: [] } });
    const other = newRun({
      name: 'other',
      status: 'waiting',
      wait: { until: t0 + 1_000, signals: [] },
    });
    for (const run of [later, sooner, other]) await a.create(run);
    expect((await a.load(later.runId))?.run).toMatchObject({ status: 'waiting', wait: later.wait });
    expect(await a.nextWake(definitions)).toBe(t0 + 3_000);
    // Only later times, when asked: a run due already (parked by a worker, say) hides no later sleeper.
    expect(await a.nextWake(definitions, t0 + 3_000)).toBe(t0 + 7_000);
    expect(await a.nextWake(definitions, t0 + 7_000)).toBeNull();
    expect(await claimableAt(a, t0 + 2_999)).toEqual([]);
    expect(await claimableAt(a, t0 + 3_000)).toEqual([sooner.runId]);
    expect(await claimableAt(a, t0 + 7_000)).toEqual([later.runId, sooner.runId]);
    // A woken run moves on: its wait is gone with the first checkpoint, and it no longer counts for wake-ups.
    const lease = (await a.acquire(sooner.runId, { owner: 'w', ttlMs: longTtlMs }))!;
    await a.save(lease, checkpoint(1));
    expect((await a.load(sooner.runId))?.run).toMatchObject({ status: 'running', wait: null });
    expect(await a.nextWake(definitions)).toBe(t0 + 7_000);
  });

  it('deletes the mailbox with the run: an id created again starts empty and has forgotten its keys', async () => {
    const a = await ctx.store();
    const init = newRun();
    await a.create(init);
    await a.signal(init.runId, { name: 'n', payload: 1, idempotencyKey: 'k' });
    expect(await a.delete(init.runId)).toBe(true);
    expect(await a.mailbox(init.runId)).toEqual([]);
    await a.create(init);
    expect((await a.load(init.runId))?.signals).toEqual([]);
    expect(await a.signal(init.runId, { name: 'n', payload: 2, idempotencyKey: 'k' })).toEqual({
      seq: 1,
      duplicate: false,
    });
  });

  it('tells subscribed workers at once when a signal wakes a waiting run', async () => {
    const a = await ctx.store();
    const b = await ctx.store();
    if (b.subscribe === undefined) return;
    const lease = await heldRun(a);
    await waitFor(a, lease, { until: null, signals: ['go'] });
    let woken = 0;
    const unsubscribe = await b.subscribe(() => {
      woken += 1;
    });
    try {
      await a.signal(lease.runId, { name: 'go', payload: null });
      await vi.waitFor(() => expect(woken).toBeGreaterThan(0), { timeout: 5_000 });
    } finally {
      await unsubscribe();
    }
  });

  it('lets a waiting run be cancelled, deleted and listed like any other', async () => {
    const a = await ctx.store();
    const lease = await heldRun(a);
    await waitFor(a, lease, { until: null, signals: ['go'] });
    expect((await a.list({ status: ['waiting', 'running'] })).map((r) => r.status)).toEqual([
      'waiting',
    ]);
    const woken = (await a.acquire(lease.runId, { owner: 'b', ttlMs: longTtlMs }))!;
    await a.updateStatus(woken, { status: 'cancelled' });
    await a.release(woken);
    expect((await a.load(lease.runId))?.run).toMatchObject({ status: 'cancelled', wait: null });
    expect(await a.delete(lease.runId)).toBe(true);
  });
}
