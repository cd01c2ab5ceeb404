import { expect, it } from 'vitest';
import {
  isCairnError,
  LeaseHeldError,
  LeaseLostError,
  RunNotFoundError,
  type DurableStore,
  type Lease,
  type NewRun,
} from '@cairn/sdk';
import { checkpoint, entries, longTtlMs, newRun, type ConformanceContext } from './context.js';
import { writePaths } from './lease-tests.js';

const parentOf = (lease: Lease) => ({ runId: lease.runId, incarnation: lease.incarnation });

/** A parent run claimed by `owner` through `store`, with a child run created and adopted under it. */
async function parentWithChild(
  store: DurableStore,
  owner: string,
  ttlMs: number,
  child: (parentRunId: string) => Partial<NewRun> = () => ({}),
) {
  const parent = newRun();
  await store.create(parent);
  const lease = (await store.acquire(parent.runId, { owner, ttlMs }))!;
  const init = newRun({ name: 'child', ...child(parent.runId), parent: parentOf(lease) });
  const created = await store.create(init);
  const adopted = (await store.adopt(init.runId, lease))!;
  return { parent, lease, child: init, created: created.run, adopted };
}

/** Registers child runs: held exactly as long as their root, fenced by it, deleted with it. */
export function childTests(ctx: ConformanceContext): void {
  it('holds a child run exactly while its root is held, however long the root keeps renewing', async () => {
    const { shortTtlMs } = ctx.harness();
    const a = await ctx.store();
    const b = await ctx.store();
    const { parent, lease, child, created } = await parentWithChild(a, 'a', shortTtlMs);
    expect(created).toMatchObject({ parent: parentOf(lease), rootRunId: parent.runId });
    // The root renews past the lease it had when it adopted the child.
    const renewed = await a.renew(lease, longTtlMs);
    await ctx.harness().expireLeases();

    expect(await b.acquire(child.runId, { owner: 'b', ttlMs: longTtlMs })).toBeUndefined();
    const definitions = [{ kind: child.kind, name: child.name }];
    expect(await b.claimable({ limit: 10, definitions })).toEqual([]);
    const seen = (await b.load(child.runId))?.run;
    expect(seen).toMatchObject({ owner: 'a', leaseUntil: renewed.leaseUntil });
    expect((await b.list({ name: 'child' }))[0]).toMatchObject({ owner: 'a' });
    await expect(b.delete(child.runId)).rejects.toBeInstanceOf(LeaseHeldError);
    expect(await b.requestCancel(child.runId)).toBe(false);

    await a.release(renewed);
    // A child is never claimed on its own, even with its root released: the root's next holder adopts it.
    expect(await b.acquire(child.runId, { owner: 'b', ttlMs: longTtlMs })).toBeUndefined();
    expect((await b.load(child.runId))?.run).toMatchObject({ owner: null, leaseUntil: null });
  });

  it('fences a holder that lost the root out of its child writes, before the new holder adopts the child', async () => {
    const { shortTtlMs } = ctx.harness();
    const a = await ctx.store();
    const b = await ctx.store();
    const { parent, child, adopted } = await parentWithChild(a, 'a', shortTtlMs);
    await a.append(adopted, entries(1));
    await ctx.harness().expireLeases();
    await b.acquire(parent.runId, { owner: 'b', ttlMs: longTtlMs });
    for (const [name, write] of Object.entries(writePaths)) {
      await expect(write(a, adopted), name).rejects.toBeInstanceOf(LeaseLostError);
    }
    const loaded = await b.load(child.runId);
    expect(loaded?.journal).toEqual(entries(1));
    expect(loaded?.run.status).toBe('running');
  });

  it('adopts only its own children, and creates a child only under an existing parent incarnation', async () => {
    const a = await ctx.store();
    const parent = newRun();
    const stranger = newRun();
    await a.create(parent);
    await a.create(stranger);
    const lease = (await a.acquire(parent.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    const refused = await a.adopt(stranger.runId, lease).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isCairnError(refused) && refused.code).toBe('INVALID_ARGUMENT');
    await expect(
      a.create(newRun({ parent: { runId: parent.runId, incarnation: `${lease.incarnation}x` } })),
    ).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(
      a.create(newRun({ parent: { runId: 'no-such-parent', incarnation: '1' } })),
    ).rejects.toBeInstanceOf(RunNotFoundError);
  });

  it('deletes a run with its child runs, so a run created again under that id starts its children afresh', async () => {
    const a = await ctx.store();
    const { parent, lease, child, adopted } = await parentWithChild(a, 'a', longTtlMs, (id) => ({
      runId: `${id}/node`,
    }));
    await a.save(adopted, checkpoint(1, { status: 'completed', output: 'first run' }));
    await a.save(lease, checkpoint(2, { status: 'completed', output: 'parent' }));
    await a.release(lease);
    expect(await a.delete(parent.runId)).toBe(true);
    expect(await a.load(child.runId)).toBeUndefined();

    await a.create(parent);
    const next = (await a.acquire(parent.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    const created = await a.create({ ...child, parent: parentOf(next) });
    expect(created.created).toBe(true);
    expect(created.run).toMatchObject({ status: 'running', epoch: 0 });
  });

  it('fences the old holder out of its child writes when the root is taken back by its own owner', async () => {
    const a = await ctx.store();
    const restarted = await ctx.store();
    const { parent, lease: first, child, adopted } = await parentWithChild(a, 'w1', longTtlMs);
    // The same owner name takes the root back while the old lease is still live (a restarted process).
    const again = await restarted.acquire(parent.runId, {
      owner: 'w1',
      ttlMs: longTtlMs,
      reclaimOwn: true,
    });
    expect(again?.epoch).toBe(first.epoch + 1);
    for (const [name, write] of Object.entries(writePaths)) {
      await expect(write(a, adopted), name).rejects.toBeInstanceOf(LeaseLostError);
    }
    expect((await restarted.load(child.runId))?.journal).toEqual([]);
  });

  it('never prunes a child run on its own, even finished, while its root has not ended', async () => {
    const a = await ctx.store();
    const { lease, child, adopted } = await parentWithChild(a, 'a', longTtlMs);
    await a.save(adopted, checkpoint(1, { status: 'completed', output: 'child done' }));
    await a.release(lease);
    const updatedAt = (await a.load(child.runId))!.run.updatedAt;
    expect(await a.prune({ olderThan: updatedAt + 1 })).toBe(0);
    expect((await a.load(child.runId))?.run.status).toBe('completed');
  });

  it('prunes child runs with their root', async () => {
    const a = await ctx.store();
    const { parent, lease, child } = await parentWithChild(a, 'a', longTtlMs);
    await a.save(lease, checkpoint(1, { status: 'completed', output: 'done' }));
    await a.release(lease);
    const updatedAt = (await a.load(parent.runId))!.run.updatedAt;
    expect(await a.prune({ olderThan: updatedAt + 1 })).toBe(1);
    expect(await a.load(child.runId)).toBeUndefined();
  });
}
