import { expect, it, type TestContext } from 'vitest';
import { CairnError, LeaseLostError, type DurableStore, type StreamStore } from '@cairn/sdk';
import { checkpoint, entries, longTtlMs, newRun, type ConformanceContext } from './context.js';
import { textChunks } from './stream-tests.js';

type Riding = DurableStore & StreamStore & { streamsWithWrites: true };

/** The store under test, or the test skipped when its checkpoints carry no stream chunks (it need not). */
async function riding(ctx: ConformanceContext, t: TestContext): Promise<Riding> {
  const store = await ctx.store();
  if (store.streamsWithWrites !== true || store.appendStream === undefined) t.skip();
  return store as Riding;
}

/**
 * Registers `Checkpoint.stream` and `append`'s `stream` for a store whose `streamsWithWrites` is true: the
 * chunks a checkpoint or a journal append carries are written with it and only with it, as a stream append
 * would write them.
 */
export function checkpointStreamTests(ctx: ConformanceContext): void {
  it('writes the chunks a checkpoint carries with it, after those appended, and nothing twice when retried', async (t) => {
    const store = await riding(ctx, t);
    const init = newRun();
    await store.create(init);
    const lease = (await store.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    await store.appendStream(lease, textChunks('u', 1, 2));
    const carried = checkpoint(1, { stream: textChunks('u', 3, 2) });
    await store.save(lease, carried);
    // The same checkpoint again (its first outcome was unknown), and one whose chunks overlap what is stored.
    await store.save(lease, carried);
    await store.save(lease, checkpoint(2, { stream: textChunks('u', 4, 2) }));
    expect(await store.readStream(init.runId)).toEqual(textChunks('u', 1, 5));
    expect((await store.load(init.runId))!.run.snapshot).toEqual({ step: 2 });
  });

  it('writes none of the chunks of a checkpoint it refuses: fenced out, held by mail, or leaving a gap', async (t) => {
    const store = await riding(ctx, t);
    const init = newRun();
    await store.create(init);
    const old = (await store.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    await store.release(old);
    const lease = (await store.acquire(init.runId, { owner: 'b', ttlMs: longTtlMs }))!;
    await store.appendStream(lease, textChunks('u', 1, 1));
    await expect(
      store.save(old, checkpoint(1, { stream: textChunks('u', 2, 2) })),
    ).rejects.toBeInstanceOf(LeaseLostError);
    // A signal waits: a checkpoint with unlessMail writes nothing, its chunks included.
    await store.signal(init.runId, { name: 'nudge', payload: null });
    const held = await store.save(
      lease,
      checkpoint(1, { stream: textChunks('u', 2, 1), unlessMail: true }),
    );
    expect(held).toEqual({ written: false, mail: true });
    const gap = await store
      .save(lease, checkpoint(1, { stream: textChunks('u', 4, 1) }))
      .catch((error: unknown) => error);
    expect(gap).toBeInstanceOf(CairnError);
    expect((gap as CairnError).code).toBe('INVALID_ARGUMENT');
    expect(await store.readStream(init.runId)).toEqual(textChunks('u', 1, 1));
    expect((await store.load(init.runId))!.run.snapshot).toEqual(init.snapshot);
  });

  it('writes the chunks a journal append carries with its entries, and none when it refuses it', async (t) => {
    const store = await riding(ctx, t);
    const init = newRun();
    await store.create(init);
    const old = (await store.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    await store.release(old);
    const lease = (await store.acquire(init.runId, { owner: 'b', ttlMs: longTtlMs }))!;
    await store.append(lease, entries(1, 2), textChunks('u', 1, 2));
    // Retried (an unknown outcome): nothing twice.
    await store.append(lease, entries(1, 2), textChunks('u', 1, 2));
    await expect(store.append(old, entries(3), textChunks('u', 3, 1))).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    const gap = await store
      .append(lease, entries(3), textChunks('u', 5, 1))
      .catch((error: unknown) => error);
    expect((gap as CairnError).code).toBe('INVALID_ARGUMENT');
    expect(await store.readStream(init.runId)).toEqual(textChunks('u', 1, 2));
    expect((await store.load(init.runId))!.journal.map((entry) => entry.seq)).toEqual([1, 2]);
  });
}
