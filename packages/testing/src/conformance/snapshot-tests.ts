import { expect, it } from 'vitest';
import { LeaseLostError, RunNotFoundError, type SerializedError } from '@cairn/sdk';
import { checkpoint, entries, longTtlMs, newRun, type ConformanceContext } from './context.js';

const owner = 'worker-a';

/** Registers the `SnapshotStore` half of the contract: create, load, save, append, status, list, delete, prune. */
export function snapshotTests(ctx: ConformanceContext): void {
  it('creates a run once and returns the stored record on a second create', async () => {
    const store = await ctx.store();
    const init = newRun();
    const first = await store.create(init);
    expect(first.created).toBe(true);
    expect(first.run).toMatchObject({
      runId: init.runId,
      kind: 'agent',
      name: 'conformance',
      signature: 'sig-1',
      status: 'running',
      epoch: 0,
      owner: null,
      leaseUntil: null,
      snapshot: init.snapshot,
    });
    const second = await store.create({ ...init, name: 'other', snapshot: null });
    expect(second.created).toBe(false);
    expect(second.run).toEqual(first.run);
  });

  it('loads undefined for an unknown run and refuses to claim it', async () => {
    const store = await ctx.store();
    expect(await store.load('no-such-run')).toBeUndefined();
    await expect(store.acquire('no-such-run', { owner, ttlMs: longTtlMs })).rejects.toBeInstanceOf(
      RunNotFoundError,
    );
  });

  it('round-trips a checkpoint through save and load, and the checkpoint supersedes the journal', async () => {
    const store = await ctx.store();
    const init = newRun();
    await store.create(init);
    const lease = await store.acquire(init.runId, { owner, ttlMs: longTtlMs });
    expect(lease).toBeDefined();
    await store.append(lease!, entries(1, 2));
    const error: SerializedError = {
      name: 'Boom',
      code: 'TOOL_FAILED',
      message: 'no',
      retryable: false,
      data: { a: 1 },
    };
    const snapshot = {
      step: 3,
      text: 'üñí 😀 "quoted"',
      camelCase: { snake_case: [1.5, true, null] },
    };
    await store.save(lease!, {
      status: 'suspended',
      signature: 'sig-2',
      snapshot,
      output: { answer: 42 },
      error,
      journalSeq: 2,
    });
    const loaded = await store.load(init.runId);
    expect(loaded?.journal).toEqual([]);
    expect(loaded?.run).toMatchObject({
      status: 'suspended',
      signature: 'sig-2',
      snapshot,
      output: { answer: 42 },
      error,
      epoch: lease!.epoch,
    });
    await store.save(lease!, checkpoint(4, { journalSeq: 2 }));
    const again = await store.load(init.runId);
    expect(again?.run.snapshot).toEqual({ step: 4 });
    expect(again?.run.output).toBeUndefined();
    expect(again?.run.error).toBeUndefined();
  });

  it('keeps the journal in seq order and skips entries a retried append repeats', async () => {
    const store = await ctx.store();
    const init = newRun();
    await store.create(init);
    const lease = (await store.acquire(init.runId, { owner, ttlMs: longTtlMs }))!;
    await store.append(lease, entries(1, 2));
    await store.append(lease, entries(2, 3));
    await store.append(lease, entries(1, 2, 3));
    await store.append(lease, []);
    await store.append(lease, entries(4, 5, 6));
    const loaded = await store.load(init.runId);
    expect(loaded?.journal).toEqual(entries(1, 2, 3, 4, 5, 6));
  });

  it('changes only status and error with updateStatus, keeping snapshot and journal', async () => {
    const store = await ctx.store();
    const init = newRun();
    await store.create(init);
    const lease = (await store.acquire(init.runId, { owner, ttlMs: longTtlMs }))!;
    await store.save(lease, checkpoint(7));
    await store.append(lease, entries(1, 2));
    const error: SerializedError = {
      name: 'Stop',
      code: 'RUN_SUSPENDED',
      message: 'later',
      retryable: true,
    };
    await store.updateStatus(lease, { status: 'suspended', error });
    const loaded = await store.load(init.runId);
    expect(loaded?.run.status).toBe('suspended');
    expect(loaded?.run.error).toEqual(error);
    expect(loaded?.run.snapshot).toEqual({ step: 7 });
    expect(loaded?.journal).toEqual(entries(1, 2));
    await store.updateStatus(lease, { status: 'running' });
    expect((await store.load(init.runId))?.run.error).toBeUndefined();
  });

  it('lists runs oldest first, filtered by status, kind and name, up to a limit', async () => {
    const store = await ctx.store();
    const a = newRun({ runId: 'list-a', kind: 'agent', name: 'alpha' });
    const b = newRun({ runId: 'list-b', kind: 'planner', name: 'beta' });
    const c = newRun({ runId: 'list-c', kind: 'agent', name: 'beta' });
    for (const run of [a, b, c]) await store.create(run);
    const lease = (await store.acquire(b.runId, { owner, ttlMs: longTtlMs }))!;
    await store.save(lease, checkpoint(1, { status: 'completed', output: 'done' }));

    const ids = (runs: { runId: string }[]) => runs.map((run) => run.runId);
    expect(ids(await store.list())).toEqual(['list-a', 'list-b', 'list-c']);
    expect(ids(await store.list({ status: 'running' }))).toEqual(['list-a', 'list-c']);
    expect(ids(await store.list({ status: ['completed', 'failed'] }))).toEqual(['list-b']);
    expect(ids(await store.list({ status: [] }))).toEqual([]);
    expect(ids(await store.list({ kind: 'agent' }))).toEqual(['list-a', 'list-c']);
    expect(ids(await store.list({ name: 'beta' }))).toEqual(['list-b', 'list-c']);
    expect(ids(await store.list({ kind: 'agent', name: 'beta', status: 'running' }))).toEqual([
      'list-c',
    ]);
    expect(ids(await store.list({ limit: 2 }))).toEqual(['list-a', 'list-b']);
    expect((await store.list({ status: 'completed' }))[0]?.output).toBe('done');
  });

  it('deletes a run with its journal, and reports whether it existed', async () => {
    const store = await ctx.store();
    const init = newRun();
    await store.create(init);
    const lease = (await store.acquire(init.runId, { owner, ttlMs: longTtlMs }))!;
    await store.append(lease, entries(1, 2));
    await store.release(lease);
    expect(await store.delete(init.runId)).toBe(true);
    expect(await store.delete(init.runId)).toBe(false);
    expect(await store.load(init.runId)).toBeUndefined();
    await expect(store.save(lease, checkpoint(1))).rejects.toBeInstanceOf(LeaseLostError);
    await store.create(init);
    const recreated = await store.load(init.runId);
    expect(recreated?.journal).toEqual([]);
    expect(recreated?.run.epoch).toBe(0);
    expect(recreated?.run.incarnation).not.toBe(lease.incarnation);
  });

  it('prunes finished runs updated before a time and keeps the rest', async () => {
    const store = await ctx.store();
    const prune = store.prune.bind(store);
    const done = newRun();
    const failed = newRun();
    const running = newRun();
    for (const run of [done, failed, running]) await store.create(run);
    for (const [run, status] of [
      [done, 'completed'],
      [failed, 'failed'],
    ] as const) {
      const lease = (await store.acquire(run.runId, { owner, ttlMs: longTtlMs }))!;
      await store.save(lease, checkpoint(1, { status }));
      await store.release(lease);
    }
    const records = await store.list();
    const oldest = Math.min(...records.map((run) => run.updatedAt));
    const newest = Math.max(...records.map((run) => run.updatedAt));
    expect(await prune({ olderThan: oldest })).toBe(0);
    expect(await prune({ olderThan: newest + 1, status: 'completed' })).toBe(1);
    expect(await store.load(done.runId)).toBeUndefined();
    expect(await prune({ olderThan: new Date(newest + 1) })).toBe(1);
    expect((await store.list()).map((run) => run.runId)).toEqual([running.runId]);
  });
}
