import { expect, it } from 'vitest';
import { longTtlMs, newRun, type ConformanceContext } from './context.js';

/** Registers what workers rely on: queued runs, finding claimable runs, recoveries, cancel requests. */
export function workerTests(ctx: ConformanceContext): void {
  it('lists claimable runs of the given definitions, oldest first, skipping held and finished ones', async () => {
    const store = await ctx.store();
    const queued = newRun({ status: 'queued' });
    const held = newRun();
    const otherName = newRun({ name: 'other' });
    const finished = newRun();
    const later = newRun({ status: 'queued' });
    for (const run of [queued, held, otherName, finished, later]) await store.create(run);
    expect((await store.load(queued.runId))?.run).toMatchObject({
      status: 'queued',
      recoveries: 0,
      cancelRequested: false,
    });
    await store.acquire(held.runId, { owner: 'w1', ttlMs: longTtlMs });
    const done = (await store.acquire(finished.runId, { owner: 'w1', ttlMs: longTtlMs }))!;
    await store.save(done, {
      status: 'completed',
      signature: 'sig-1',
      snapshot: {},
      output: 1,
      journalSeq: 0,
    });
    await store.release(done);

    const definitions = [{ kind: 'agent', name: 'conformance' }];
    expect(await store.claimable({ limit: 10, definitions })).toEqual([queued.runId, later.runId]);
    expect(await store.claimable({ limit: 1, definitions })).toEqual([queued.runId]);
    expect(await store.claimable({ limit: 10, definitions: [] })).toEqual([]);
    expect(await store.claimable({ limit: 10, definitions, reclaimOwner: 'w1' })).toEqual([
      queued.runId,
      held.runId,
      later.runId,
    ]);
  });

  it('counts a claim from a holder that never released as a recovery taken from it, and a release as none', async () => {
    const { shortTtlMs } = ctx.harness();
    const a = await ctx.store();
    const b = await ctx.store();
    const init = newRun();
    await a.create(init);
    const first = (await a.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    expect(first).toMatchObject({ recoveries: 0, takenFrom: null });
    await a.release(first);
    const second = (await b.acquire(init.runId, { owner: 'b', ttlMs: shortTtlMs }))!;
    expect(second).toMatchObject({ recoveries: 0, takenFrom: null });
    await ctx.harness().expireLeases();
    const third = (await a.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    expect(third).toMatchObject({ recoveries: 1, epoch: second.epoch + 1, takenFrom: 'b' });
    expect((await a.load(init.runId))?.run.recoveries).toBe(1);
  });

  it('delivers a cancel request to the holder through renew, and refuses one for a finished run', async () => {
    const a = await ctx.store();
    const client = await ctx.store();
    const init = newRun();
    await a.create(init);
    const lease = (await a.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    expect(lease.cancelRequested).toBe(false);
    expect((await a.renew(lease, longTtlMs)).cancelRequested).toBe(false);
    expect(await client.requestCancel(init.runId)).toBe(true);
    expect((await a.renew(lease, longTtlMs)).cancelRequested).toBe(true);
    expect((await client.load(init.runId))?.run.cancelRequested).toBe(true);
    await a.save(lease, {
      status: 'cancelled',
      signature: 'sig-1',
      snapshot: {},
      journalSeq: 0,
    });
    expect(await client.requestCancel(init.runId)).toBe(false);
    expect(await client.requestCancel('no-such-run')).toBe(false);
  });

  it('lets a restarted owner take back at once what it held when it died', async () => {
    const a = await ctx.store();
    const restarted = await ctx.store();
    const init = newRun();
    await a.create(init);
    const before = (await a.acquire(init.runId, { owner: 'worker-1', ttlMs: longTtlMs }))!;
    expect(
      await restarted.acquire(init.runId, { owner: 'worker-1', ttlMs: longTtlMs }),
    ).toBeUndefined();
    // The holder dies without releasing: its sessions end, where the store has sessions.
    await ctx.harness().crash?.(a);
    const after = await restarted.acquire(init.runId, {
      owner: 'worker-1',
      ttlMs: longTtlMs,
      reclaimOwn: true,
    });
    expect(after?.epoch).toBe(before.epoch + 1);
  });
}
