import { expect, it } from 'vitest';
import { LeaseHeldError, LeaseLostError } from '@cairn/sdk';
import { checkpoint, entries, longTtlMs, newRun, type ConformanceContext } from './context.js';
import { writePaths } from './lease-tests.js';

const owner = 'worker-a';

/**
 * Registers what makes a fence exact: the incarnation of a run id, the order of checkpoints, final statuses
 * that stay final, deletes that never remove a live run, and batches in which every write stands alone.
 */
export function fencingTests(ctx: ConformanceContext): void {
  it('never accepts a write made for a run that was deleted and created again, whatever its epoch', async () => {
    const { shortTtlMs } = ctx.harness();
    const a = await ctx.store();
    const b = await ctx.store();
    const c = await ctx.store();
    const init = newRun();
    await a.create(init);
    const stale = (await a.acquire(init.runId, { owner: 'a', ttlMs: shortTtlMs }))!;
    await ctx.harness().expireLeases();
    const taken = (await b.acquire(init.runId, { owner: 'b', ttlMs: longTtlMs }))!;
    await b.save(taken, checkpoint(1, { status: 'completed', output: 'from b' }));
    await b.release(taken);
    expect(await b.delete(init.runId)).toBe(true);
    await b.create(init);
    const again = (await c.acquire(init.runId, { owner: 'c', ttlMs: longTtlMs }))!;
    // The same run id at the same epoch number: only the incarnation tells them apart.
    expect(again.epoch).toBe(stale.epoch);
    expect(again.incarnation).not.toBe(stale.incarnation);
    for (const [name, write] of Object.entries(writePaths)) {
      await expect(write(a, stale), name).rejects.toBeInstanceOf(LeaseLostError);
    }
    await expect(a.renew(stale, longTtlMs)).rejects.toBeInstanceOf(LeaseLostError);
    await a.release(stale);
    const loaded = await c.load(init.runId);
    expect(loaded?.run).toMatchObject({ status: 'running', owner: 'c', epoch: again.epoch });
    expect(loaded?.run.output).toBeUndefined();
    expect(loaded?.journal).toEqual([]);
  });

  it('refuses the lease of an old incarnation at the same epoch and owner, sent by a store that never held it', async () => {
    const a = await ctx.store();
    const other = await ctx.store();
    const init = newRun();
    await a.create(init);
    const old = (await a.acquire(init.runId, { owner, ttlMs: longTtlMs }))!;
    await a.release(old);
    await a.delete(init.runId);
    await a.create(init);
    const fresh = (await a.acquire(init.runId, { owner, ttlMs: longTtlMs }))!;
    expect({ owner: fresh.owner, epoch: fresh.epoch }).toEqual({
      owner: old.owner,
      epoch: old.epoch,
    });
    for (const [name, write] of Object.entries(writePaths)) {
      await expect(write(other, old), name).rejects.toBeInstanceOf(LeaseLostError);
    }
    await expect(other.renew(old, longTtlMs)).rejects.toBeInstanceOf(LeaseLostError);
    await other.release(old);
    expect((await a.load(init.runId))?.run).toMatchObject({ owner, epoch: fresh.epoch });
    await a.renew(fresh, longTtlMs);
  });

  it('keeps a final status final: no write moves a run out of it, a repeated final write changes nothing', async () => {
    const store = await ctx.store();
    for (const status of ['completed', 'failed', 'cancelled', 'dead_lettered'] as const) {
      const init = newRun();
      await store.create(init);
      const lease = (await store.acquire(init.runId, { owner, ttlMs: longTtlMs }))!;
      await store.save(lease, checkpoint(3, { status, output: 'the end', journalSeq: 4 }));
      await store.save(lease, checkpoint(3, { status, output: 'the end', journalSeq: 4 }));
      await store.updateStatus(lease, { status });
      for (const [name, write] of Object.entries(writePaths)) {
        await expect(write(store, lease), `${status} ${name}`).rejects.toBeInstanceOf(
          LeaseLostError,
        );
      }
      await expect(
        store.save(lease, checkpoint(9, { status: 'running', journalSeq: 9 })),
      ).rejects.toBeInstanceOf(LeaseLostError);
      await store.release(lease);
      expect(await store.acquire(init.runId, { owner: 'other', ttlMs: longTtlMs })).toBeUndefined();
      const loaded = await store.load(init.runId);
      expect(loaded?.run).toMatchObject({ status, snapshot: { step: 3 }, output: 'the end' });
      expect(loaded?.journal).toEqual([]);
    }
  });

  it('refuses a checkpoint older than the stored one (a statement that arrived late) and keeps newer marks', async () => {
    const store = await ctx.store();
    const init = newRun();
    await store.create(init);
    const lease = (await store.acquire(init.runId, { owner, ttlMs: longTtlMs }))!;
    await store.append(lease, entries(1, 2));
    await store.save(lease, checkpoint(1, { journalSeq: 2 }));
    await store.append(lease, entries(3, 4));
    await store.save(lease, checkpoint(2, { journalSeq: 4 }));
    await store.append(lease, entries(5, 6));
    // The first checkpoint's statement again, as a lost connection may deliver it late.
    await expect(store.save(lease, checkpoint(1, { journalSeq: 2 }))).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    // A checkpoint sent again after an unknown outcome is the same checkpoint: it applies.
    await store.save(lease, checkpoint(2, { journalSeq: 4 }));
    // An append the checkpoint already accounts for (a statement delivered late) is refused and changes nothing:
    // reporting its marks written would lose a write-ahead mark made from a checkpoint that lied.
    await expect(store.append(lease, entries(3, 4))).rejects.toBeInstanceOf(LeaseLostError);
    await expect(store.append(lease, entries(4, 7))).rejects.toBeInstanceOf(LeaseLostError);
    // One already appended since (a retry after an unknown outcome) is skipped.
    await store.append(lease, entries(5, 6));
    const loaded = await store.load(init.runId);
    expect(loaded?.run.snapshot).toEqual({ step: 2 });
    expect(loaded?.journal).toEqual(entries(5, 6));
  });

  it('accepts a final checkpoint that released the lease sent again after an unknown outcome, changing nothing', async () => {
    const a = await ctx.store();
    const b = await ctx.store();
    const init = newRun();
    await a.create(init);
    const lease = (await a.acquire(init.runId, { owner, ttlMs: longTtlMs }))!;
    const final = checkpoint(3, { status: 'completed', output: 'done', release: true });
    await a.save(lease, final);
    // The answer was lost on its way back: the runtime sends the same write again.
    await expect(a.save(lease, final)).resolves.toEqual({ written: true, mail: false });
    expect((await b.load(init.runId))?.run).toMatchObject({
      status: 'completed',
      output: 'done',
      owner: null,
    });
    // Another status is still refused: the run ended.
    await expect(
      a.save(lease, checkpoint(4, { status: 'failed', release: true })),
    ).rejects.toBeInstanceOf(LeaseLostError);
  });

  it('keeps the marks a checkpoint does not account for (written while it was on its way)', async () => {
    const store = await ctx.store();
    const init = newRun();
    await store.create(init);
    const lease = (await store.acquire(init.runId, { owner, ttlMs: longTtlMs }))!;
    await store.append(lease, entries(1, 2, 3));
    await store.save(lease, checkpoint(1, { journalSeq: 2 }));
    expect((await store.load(init.runId))?.journal).toEqual(entries(3));
  });

  it('deletes a run only when no live lease holds it, decided by the store', async () => {
    const { shortTtlMs } = ctx.harness();
    const a = await ctx.store();
    const client = await ctx.store();
    const init = newRun();
    await a.create(init);
    const lease = (await a.acquire(init.runId, { owner, ttlMs: shortTtlMs }))!;
    await expect(client.delete(init.runId)).rejects.toBeInstanceOf(LeaseHeldError);
    expect((await client.load(init.runId))?.run.owner).toBe(owner);
    await a.append(lease, entries(1));
    await ctx.harness().expireLeases();
    expect(await client.delete(init.runId)).toBe(true);
    expect(await client.load(init.runId)).toBeUndefined();
    await expect(a.append(lease, entries(2))).rejects.toBeInstanceOf(LeaseLostError);
    await a.release(lease);
  });

  it('checks and applies each of many concurrent writes on its own', async () => {
    const { shortTtlMs } = ctx.harness();
    const store = await ctx.store();
    const other = await ctx.store();
    const runs = Array.from({ length: 8 }, () => newRun());
    for (const run of runs) await store.create(run);
    const leases = [];
    for (const [i, run] of runs.entries()) {
      const ttlMs = i === 3 ? shortTtlMs : longTtlMs;
      leases.push((await store.acquire(run.runId, { owner, ttlMs }))!);
    }
    // One run was taken over: its holder's writes are stale, the seven others' are current.
    await ctx.harness().expireLeases();
    const taken = (await other.acquire(runs[3]!.runId, { owner: 'other', ttlMs: longTtlMs }))!;
    const saves = await Promise.allSettled(
      leases.map((lease, i) => store.save(lease, checkpoint(i + 10))),
    );
    const appends = await Promise.allSettled(
      leases.map((lease) => store.append(lease, entries(1))),
    );
    for (const [i, results] of [saves, appends].entries()) {
      expect(
        results.map((r) => r.status),
        String(i),
      ).toEqual(leases.map((_, j) => (j === 3 ? 'rejected' : 'fulfilled')));
      expect((results[3] as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLostError);
    }
    for (const [i, run] of runs.entries()) {
      const loaded = await store.load(run.runId);
      if (i === 3) {
        expect(loaded?.run).toMatchObject({ owner: 'other', epoch: taken.epoch });
        expect(loaded?.journal).toEqual([]);
      } else {
        expect(loaded?.run.snapshot).toEqual({ step: i + 10 });
        expect(loaded?.journal).toEqual(entries(1));
      }
    }
  });
}
