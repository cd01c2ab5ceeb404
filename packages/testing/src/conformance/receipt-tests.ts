import { expect, it } from 'vitest';
import { LeaseLostError, type DurableStore, type Lease } from '@cairn/sdk';
import { checkpoint, longTtlMs, newRun, type ConformanceContext } from './context.js';

/** A run held by `owner`, ready to write. */
async function heldRun(store: DurableStore, owner = 'a'): Promise<Lease> {
  const init = newRun();
  await store.create(init);
  return (await store.acquire(init.runId, { owner, ttlMs: longTtlMs }))!;
}

const follow = (text: string) => ({ name: 'cairn.follow-up', payload: { text } });

/**
 * Registers save receipts: whether a checkpoint was written and whether the mailbox holds signals past it,
 * and `unlessMail`, the completing write that is refused while a signal is unread.
 */
export function receiptTests(ctx: ConformanceContext): void {
  it('says in each save whether the mailbox holds signals the checkpoint has not consumed', async () => {
    const a = await ctx.store();
    const b = await ctx.store();
    const lease = await heldRun(a);
    expect(await a.save(lease, checkpoint(1))).toEqual({ written: true, mail: false });
    await b.signal(lease.runId, follow('one'));
    expect(await a.save(lease, checkpoint(2))).toEqual({ written: true, mail: true });
    await b.signal(lease.runId, follow('two'));
    expect(await a.save(lease, checkpoint(3, { signalsConsumed: 1 }))).toEqual({
      written: true,
      mail: true,
    });
    expect(await a.save(lease, checkpoint(4, { signalsConsumed: 2 }))).toEqual({
      written: true,
      mail: false,
    });
  });

  it('refuses a write with unlessMail while a signal is unread: nothing changes, the lease is kept', async () => {
    const a = await ctx.store();
    const b = await ctx.store();
    const lease = await heldRun(a);
    await a.save(lease, checkpoint(1));
    await b.signal(lease.runId, follow('one'));
    const completing = checkpoint(2, {
      status: 'completed',
      output: 'done',
      release: true,
      unlessMail: true,
    });
    expect(await a.save(lease, completing)).toEqual({ written: false, mail: true });
    const { run, signals } = (await b.load(lease.runId))!;
    expect(run).toMatchObject({ status: 'running', snapshot: { step: 1 }, owner: 'a' });
    expect(signals.map((s) => s.seq)).toEqual([1]);
    expect((await b.list({ status: 'running' })).map((r) => r.runId)).toContain(lease.runId);
    await expect(a.renew(lease, longTtlMs)).resolves.toBeDefined();
    // A fenced-out writer (another process, with a fence that is not the run's) is told so, mail or not.
    await expect(b.save({ ...lease, epoch: lease.epoch + 1 }, completing)).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    // Once the checkpoint consumes what is there, it is written; a retry of it changes nothing.
    const consumed = { ...completing, signalsConsumed: 1 };
    expect(await a.save(lease, consumed)).toEqual({ written: true, mail: false });
    expect(await a.save(lease, consumed)).toEqual({ written: true, mail: false });
    expect((await b.load(lease.runId))!.run).toMatchObject({ status: 'completed', owner: null });
    expect(await b.mailbox(lease.runId)).toEqual([]);
  });

  it('refuses a checkpoint older than the stored one without giving the lease up, even with release', async () => {
    const a = await ctx.store();
    const b = await ctx.store();
    const lease = await heldRun(a);
    await a.save(lease, checkpoint(2, { journalSeq: 5 }));
    await expect(
      a.save(lease, checkpoint(1, { journalSeq: 3, status: 'completed', release: true })),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect((await b.load(lease.runId))!.run).toMatchObject({
      status: 'running',
      snapshot: { step: 2 },
      owner: 'a',
    });
  });

  it('never both completes a run and accepts a signal it did not consume, however the two race', async () => {
    const a = await ctx.store();
    const b = await ctx.store();
    for (let round = 0; round < 8; round += 1) {
      const lease = await heldRun(a);
      await a.save(lease, checkpoint(1));
      const [sent, saved] = await Promise.allSettled([
        b.signal(lease.runId, follow(`round ${round}`)),
        a.save(
          lease,
          checkpoint(2, { status: 'completed', output: 'done', release: true, unlessMail: true }),
        ),
      ]);
      expect(saved.status).toBe('fulfilled');
      const written = saved.status === 'fulfilled' && saved.value.written;
      // Exactly one wins: an accepted signal refuses the completion, a completion refuses the signal.
      expect({ accepted: sent.status === 'fulfilled', completed: written }).toEqual(
        written ? { accepted: false, completed: true } : { accepted: true, completed: false },
      );
      const { run, signals } = (await b.load(lease.runId))!;
      expect(run.status).toBe(written ? 'completed' : 'running');
      expect(signals).toHaveLength(written ? 0 : 1);
    }
  });
}
