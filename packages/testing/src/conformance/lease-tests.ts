import { expect, it } from 'vitest';
import {
  LeaseLostError,
  RunNotFoundError,
  type DurableStore,
  type Fence,
  type Lease,
} from '@cairn/sdk';
import {
  checkpoint,
  entries,
  longTtlMs,
  newRun,
  settleAll,
  type ConformanceContext,
} from './context.js';

/** Every fenced write path, each given the fence it writes under. */
export const writePaths: Record<string, (store: DurableStore, fence: Fence) => Promise<unknown>> = {
  save: (store, fence) => store.save(fence, checkpoint(99, { journalSeq: 200 })),
  append: (store, fence) => store.append(fence, entries(301, 302)),
  updateStatus: (store, fence) => store.updateStatus(fence, { status: 'suspended' }),
};

/** Registers the `LeaseStore` half of the contract: claims, fencing, races, renewals, releases, adoption. */
export function leaseTests(ctx: ConformanceContext, claimers: number): void {
  it('claims a free run, raising the epoch, and refuses a second owner while the lease is live', async () => {
    const a = await ctx.store();
    const b = await ctx.store();
    const init = newRun();
    await a.create(init);
    const lease = await a.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs });
    expect(lease).toMatchObject({ runId: init.runId, owner: 'a', epoch: 1 });
    expect(await b.acquire(init.runId, { owner: 'b', ttlMs: longTtlMs })).toBeUndefined();
    expect(await a.acquire(init.runId, { owner: 'a2', ttlMs: longTtlMs })).toBeUndefined();
    const loaded = await b.load(init.runId);
    expect(loaded?.run).toMatchObject({ owner: 'a', epoch: 1 });
    expect(loaded?.run.leaseUntil).toBe(lease!.leaseUntil);
  });

  it('rejects a stale epoch on every write path and on renew once another owner took over', async () => {
    const { shortTtlMs } = ctx.harness();
    const a = await ctx.store();
    const b = await ctx.store();
    const init = newRun();
    await a.create(init);
    const first = (await a.acquire(init.runId, { owner: 'a', ttlMs: shortTtlMs }))!;
    await ctx.harness().expireLeases();
    const second = await b.acquire(init.runId, { owner: 'b', ttlMs: longTtlMs });
    expect(second?.epoch).toBeGreaterThan(first.epoch);
    await b.save(second!, checkpoint(5));
    await b.append(second!, entries(1, 2));

    for (const [name, write] of Object.entries(writePaths)) {
      await expect(write(a, first), name).rejects.toBeInstanceOf(LeaseLostError);
      await expect(write(b, { ...second!, epoch: second!.epoch + 1 }), name).rejects.toBeInstanceOf(
        LeaseLostError,
      );
    }
    await expect(a.renew(first, longTtlMs)).rejects.toBeInstanceOf(LeaseLostError);
    await a.release(first);

    const loaded = await b.load(init.runId);
    expect(loaded?.run).toMatchObject({
      owner: 'b',
      epoch: second!.epoch,
      status: 'running',
      snapshot: { step: 5 },
    });
    expect(loaded?.journal).toEqual(entries(1, 2));
    await b.renew(second!, longTtlMs);
    await b.updateStatus(second!, { status: 'completed' });
  });

  it(`lets exactly one of ${claimers} claimers racing at a barrier win`, async () => {
    const stores = await Promise.all(Array.from({ length: claimers }, () => ctx.store()));
    const init = newRun();
    await stores[0]!.create(init);
    // Warm every client up so the race is between claims, not between connection setups.
    await Promise.all(stores.map((store) => store.load(init.runId)));
    let open!: () => void;
    const barrier = new Promise<void>((resolve) => (open = resolve));
    const racing = stores.map(async (store, i) => {
      await barrier;
      return store.acquire(init.runId, { owner: `claimer-${i}`, ttlMs: longTtlMs });
    });
    open();
    const results = await settleAll(racing);
    const rejected = results.filter((result) => result.status === 'rejected');
    expect(rejected).toEqual([]);
    const winners = results.flatMap((result) =>
      result.status === 'fulfilled' && result.value !== undefined ? [result.value] : [],
    );
    expect(winners).toHaveLength(1);
    expect(winners[0]!.epoch).toBe(1);
    expect((await stores[0]!.load(init.runId))?.run.owner).toBe(winners[0]!.owner);
  });

  it('refuses to renew a released lease and lets another owner claim right after a release', async () => {
    const a = await ctx.store();
    const b = await ctx.store();
    const init = newRun();
    await a.create(init);
    const first = (await a.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    const renewed = await a.renew(first, longTtlMs);
    expect(renewed).toMatchObject({ runId: init.runId, owner: 'a', epoch: first.epoch });
    expect(renewed.leaseUntil).toBeGreaterThanOrEqual(first.leaseUntil);
    await a.release(renewed);
    expect((await a.load(init.runId))?.run).toMatchObject({ owner: null, leaseUntil: null });
    await expect(a.renew(renewed, longTtlMs)).rejects.toBeInstanceOf(LeaseLostError);
    const second = await b.acquire(init.runId, { owner: 'b', ttlMs: longTtlMs });
    expect(second?.epoch).toBe(first.epoch + 1);
    await a.release(first);
    expect((await b.load(init.runId))?.run.owner).toBe('b');
  });

  it('raises epochs at every claim and never lowers them', async () => {
    const stores = [await ctx.store(), await ctx.store(), await ctx.store()];
    const init = newRun();
    await stores[0]!.create(init);
    const seen: number[] = [];
    for (let round = 0; round < 6; round += 1) {
      const store = stores[round % stores.length]!;
      const lease: Lease | undefined = await store.acquire(init.runId, {
        owner: `o${round}`,
        ttlMs: longTtlMs,
      });
      expect(lease).toBeDefined();
      seen.push(lease!.epoch);
      expect((await store.load(init.runId))?.run.epoch).toBe(lease!.epoch);
      await store.release(lease!);
      expect((await store.load(init.runId))?.run.epoch).toBe(lease!.epoch);
    }
    expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('adopts a child under its parent lease and fences the child writes of an older parent holder', async () => {
    const { shortTtlMs } = ctx.harness();
    const a = await ctx.store();
    const b = await ctx.store();
    const parent = newRun();
    await a.create(parent);
    const first = (await a.acquire(parent.runId, { owner: 'a', ttlMs: shortTtlMs }))!;
    const child = newRun({
      kind: 'agent',
      name: 'child',
      parent: { runId: first.runId, incarnation: first.incarnation },
    });
    await a.create(child);
    await expect(a.adopt('no-such-child', first)).rejects.toBeInstanceOf(RunNotFoundError);
    const adopted = await a.adopt(child.runId, first);
    expect(adopted).toMatchObject({
      runId: child.runId,
      owner: 'a',
      epoch: first.epoch,
      root: { runId: parent.runId, incarnation: first.incarnation },
    });
    await a.append(adopted!, entries(1));
    await ctx.harness().expireLeases();
    const second = (await b.acquire(parent.runId, { owner: 'b', ttlMs: longTtlMs }))!;
    const readopted = await b.adopt(child.runId, second);
    expect(readopted?.epoch).toBe(second.epoch);
    expect(await a.adopt(child.runId, first)).toBeUndefined();
    await expect(a.append(adopted!, entries(2))).rejects.toBeInstanceOf(LeaseLostError);
    await b.append(readopted!, entries(2));
    expect((await b.load(child.runId))?.journal).toEqual(entries(1, 2));
  });

  it('tells a reader that a holder whose process died is gone, before its lease runs out', async () => {
    const harness = ctx.harness();
    if (harness.crash === undefined) return; // a store without sessions: only the lease tells liveness
    const a = await ctx.store();
    const b = await ctx.store();
    const parent = newRun();
    const { run: created } = await a.create(parent);
    const child = newRun({ parent: { runId: parent.runId, incarnation: created.incarnation } });
    await a.create(child);
    await a.acquire(parent.runId, { owner: 'a', ttlMs: longTtlMs });
    expect((await b.load(parent.runId))!.run).toMatchObject({ owner: 'a', holderGone: false });
    await harness.crash(a);
    const gone = async () => {
      const [loaded, listed] = await Promise.all([b.load(parent.runId), b.list()]);
      return [
        loaded!.run.holderGone,
        listed.find((run) => run.runId === parent.runId)?.holderGone,
        // A child is held by its root: gone with it.
        listed.find((run) => run.runId === child.runId)?.holderGone,
      ];
    };
    for (let i = 0; i < 100 && (await gone()).some((value) => value !== true); i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await gone()).toEqual([true, true, true]);
    // Its lease still runs: only the liveness says the holder is gone.
    expect((await b.load(parent.runId))!.run.leaseUntil).toBeGreaterThan(Date.now() + 1_000);
  });

  it('keeps a run with a holder whose liveness only blipped, from an explicit claim too: no take-over, no recovery', async () => {
    const harness = ctx.harness();
    if (harness.blip === undefined) return; // a store without sessions: only the lease tells liveness
    const a = await ctx.store();
    const b = await ctx.store();
    const init = newRun();
    await a.create(init);
    const lease = (await a.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    await harness.blip(a);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await b.acquire(init.runId, { owner: 'b', ttlMs: longTtlMs })).toBeUndefined();
    expect((await b.load(init.runId))!.run).toMatchObject({
      owner: 'a',
      epoch: lease.epoch,
      recoveries: 0,
    });
    await a.renew(lease, longTtlMs);
    await a.append(lease, entries(1));
  });
}
