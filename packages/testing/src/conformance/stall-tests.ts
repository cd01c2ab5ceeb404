import { expect, it } from 'vitest';
import { CairnError, type DurableStore, type Lease } from '@cairn/sdk';
import { checkpoint, longTtlMs, newRun, type ConformanceContext } from './context.js';

const definitions = [{ kind: 'agent', name: 'conformance' }];

async function heldRun(store: DurableStore, owner = 'a'): Promise<Lease> {
  const init = newRun();
  await store.create(init);
  return (await store.acquire(init.runId, { owner, ttlMs: longTtlMs }))!;
}

/**
 * Registers what the runtime relies on to end runs that never get going and to give a woken run back to its wait:
 * `stalls` set by a status update and reset by a checkpoint, and `waiting` kept by a status update.
 */
export function stallTests(ctx: ConformanceContext): void {
  it('counts stalled attempts as a status update sets them, and resets them with the next checkpoint', async () => {
    const a = await ctx.store();
    const first = await heldRun(a);
    expect((await a.load(first.runId))!.run.stalls).toBe(0);
    const error = {
      name: 'CairnError',
      code: 'STORE_FAILED',
      message: 'refused',
      retryable: false,
    };
    await a.updateStatus(first, { status: 'suspended', error, stalls: 1 });
    await a.release(first);
    expect((await a.load(first.runId))!.run).toMatchObject({
      status: 'suspended',
      stalls: 1,
      error,
    });
    const second = (await a.acquire(first.runId, { owner: 'b', ttlMs: longTtlMs }))!;
    // A status update that does not name stalls keeps them.
    await a.updateStatus(second, { status: 'running' });
    expect((await a.load(first.runId))!.run.stalls).toBe(1);
    await a.updateStatus(second, { status: 'suspended', error, stalls: 2 });
    expect((await a.load(first.runId))!.run.stalls).toBe(2);
    expect((await a.list({ status: 'suspended' }))[0]?.stalls).toBe(2);
    await a.save(second, checkpoint(1));
    expect((await a.load(first.runId))!.run).toMatchObject({ status: 'running', stalls: 0 });
  });

  it('gives a woken run back to its wait: `waiting` keeps the wait and what woke it', async () => {
    const a = await ctx.store();
    const b = await ctx.store();
    const held = await heldRun(a);
    const wait = { until: null, signals: ['go'], detail: { approvals: [] } };
    await a.save(held, checkpoint(1, { status: 'waiting', wait, release: true }));
    await b.signal(held.runId, { name: 'go', payload: null });
    expect(await b.claimable({ limit: 10, definitions })).toEqual([held.runId]);
    const woken = (await b.acquire(held.runId, { owner: 'b', ttlMs: longTtlMs }))!;
    const error = { name: 'CairnError', code: 'RUN_SUSPENDED', message: 'down', retryable: false };
    await b.updateStatus(woken, { status: 'waiting', error, stalls: 1 });
    await b.release(woken);
    const { run, signals } = (await a.load(held.runId))!;
    expect(run).toMatchObject({ status: 'waiting', wait, owner: null, stalls: 1 });
    expect(signals.map((s) => s.name)).toEqual(['go']);
    // Still due: the signal that woke it is unread.
    expect(await a.claimable({ limit: 10, definitions })).toEqual([held.runId]);
  });

  it('refuses `waiting` for a run that is not stored waiting: a wait starts with a checkpoint', async () => {
    const a = await ctx.store();
    const held = await heldRun(a);
    await expect(a.updateStatus(held, { status: 'waiting' })).rejects.toSatisfy(
      (e) => e instanceof CairnError && e.code === 'INVALID_ARGUMENT',
    );
    expect((await a.load(held.runId))!.run).toMatchObject({ status: 'running', wait: null });
  });
}
