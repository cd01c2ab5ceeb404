import type { Checkpoint } from '@cairn/sdk';
import type { PgStore } from '@cairn/store-pg';
import type { Sql } from 'postgres';
import { describe, expect, it } from 'vitest';
import { childOf, sleep, usePgHarness, watchedSql } from './support.js';

const opened = usePgHarness('cairn_save_receipt');
let runs = 0;

/** A new root run, held by the worker `w`. */
async function heldRun(store: PgStore, prefix: string) {
  const runId = `${prefix}-${(runs += 1)}`;
  await store.create({ runId, kind: 'agent', name: 'n', signature: 's', snapshot: null });
  const lease = (await store.acquire(runId, { owner: 'w', ttlMs: 60_000 }))!;
  return { runId, lease };
}

const step = (journalSeq: number, more: Partial<Checkpoint> = {}): Checkpoint => ({
  status: 'running',
  signature: 's',
  snapshot: { step: journalSeq },
  journalSeq,
  ...more,
});

const completing = (journalSeq: number, more: Partial<Checkpoint> = {}): Checkpoint => ({
  status: 'completed',
  signature: 's',
  snapshot: { done: true, items: [1, 2, 3] },
  output: 'out',
  journalSeq,
  release: true,
  unlessMail: true,
  ...more,
});

/** Calls `send_signal` as an application does, in the transaction `tx`. */
function sendSignal(tx: Sql, schema: string, runId: string, name: string) {
  return tx`SELECT seq FROM ${tx(schema)}.send_signal(${runId}, ${name}, ${tx.json({ n: 1 })})`;
}

describe('save receipts', () => {
  it('say whether the mailbox holds a signal above the consumed cursor', async () => {
    const store = opened().harness.store();
    const { runId, lease } = await heldRun(store, 'mail');
    expect(await store.save(lease, step(1))).toEqual({ written: true, mail: false });
    await store.signal(runId, { name: 'note', payload: 1 });
    expect(await store.save(lease, step(2))).toEqual({ written: true, mail: true });
    await store.signal(runId, { name: 'note', payload: 2 });
    // Consuming the first leaves the second.
    expect(await store.save(lease, step(3, { signalsConsumed: 1 }))).toEqual({
      written: true,
      mail: true,
    });
    expect(await store.save(lease, step(4, { signalsConsumed: 2 }))).toEqual({
      written: true,
      mail: false,
    });
    expect(await store.mailbox(runId)).toEqual([]);
    expect(await store.save(lease, completing(5))).toEqual({ written: true, mail: false });
    // A retried final write changes nothing and says so.
    expect(await store.save(lease, completing(5))).toEqual({ written: true, mail: false });
  });

  it('refuse a write with unlessMail while the mailbox holds unread mail, changing nothing', async () => {
    const store = opened().harness.store();
    const { runId, lease } = await heldRun(store, 'unless');
    await store.save(lease, step(1, { snapshot: { items: ['a', 'b'] } }));
    await store.signal(runId, { name: 'note', payload: 1 });
    const before = (await store.load(runId))!;
    expect(await store.save(lease, completing(2))).toEqual({ written: false, mail: true });
    // A cursor below the signal does not cover it either.
    expect(await store.save(lease, completing(2, { signalsConsumed: 0 }))).toEqual({
      written: false,
      mail: true,
    });
    const after = (await store.load(runId))!;
    expect(after.run).toMatchObject({
      status: 'running',
      owner: 'w',
      epoch: lease.epoch,
      snapshot: { items: ['a', 'b'] },
      leaseUntil: before.run.leaseUntil,
    });
    expect(after.run.output).toBeUndefined();
    expect(after.signals.map((s) => s.seq)).toEqual([1]);
    // Still held: a write without unlessMail goes through.
    expect(await store.save(lease, step(2, { unlessMail: true, signalsConsumed: 1 }))).toEqual({
      written: true,
      mail: false,
    });
    expect(await store.save(lease, completing(3))).toEqual({ written: true, mail: false });
    expect((await store.load(runId))!.run).toMatchObject({
      status: 'completed',
      owner: null,
      output: 'out',
    });
  });

  it('checks the fence first: a fenced-out write with mail is still LeaseLostError', async () => {
    const store = opened().harness.store();
    const { runId, lease } = await heldRun(store, 'fenced');
    await store.signal(runId, { name: 'note', payload: 1 });
    await expect(
      store.save({ ...lease, epoch: lease.epoch + 7 }, completing(1)),
    ).rejects.toMatchObject({
      name: 'LeaseLostError',
    });
  });

  it('see a signal whose transaction held the row while the completing save waited for it', async () => {
    const { sql, harness } = opened();
    const store = harness.store();
    const { runId, lease } = await heldRun(store, 'race');
    let saving: Promise<unknown> | undefined;
    let settledEarly = false;
    await sql.begin(async (tx) => {
      await sendSignal(tx as unknown as Sql, harness.schema, runId, 'note');
      saving = store.save(lease, completing(1));
      void saving.then(() => (settledEarly = true));
      await sleep(300);
    });
    expect(settledEarly).toBe(false);
    expect(await saving).toEqual({ written: false, mail: true });
    const after = (await store.load(runId))!;
    expect(after.run).toMatchObject({ status: 'running', owner: 'w' });
    expect(after.signals.map((s) => s.seq)).toEqual([1]);
  });

  it('say mail for a signal committed while a plain save waited for the row', async () => {
    const { sql, harness } = opened();
    const store = harness.store();
    const { runId, lease } = await heldRun(store, 'race-plain');
    let saving: Promise<unknown> | undefined;
    await sql.begin(async (tx) => {
      await sendSignal(tx as unknown as Sql, harness.schema, runId, 'note');
      saving = store.save(lease, step(1));
      await sleep(300);
    });
    expect(await saving).toEqual({ written: true, mail: true });
  });
});

describe('save receipts in batch statements', () => {
  it('refuse unlessMail for root runs batched together, and write the ones without mail', async () => {
    const { sql, harness } = opened();
    const statements: string[] = [];
    const store = harness.store({ sql: watchedSql(sql, (text) => statements.push(text)) });
    const held = await Promise.all(
      ['b1', 'b2', 'b3', 'b4'].map((prefix) => heldRun(store, prefix)),
    );
    for (const { runId } of held.slice(0, 2)) await store.signal(runId, { name: 'n', payload: 1 });
    await store.signal(held[2]!.runId, { name: 'n', payload: 1 });
    statements.length = 0;
    const receipts = await Promise.all([
      store.save(held[3]!.lease, step(1)),
      store.save(held[0]!.lease, completing(1)),
      store.save(held[1]!.lease, step(1)),
      store.save(held[2]!.lease, completing(1, { signalsConsumed: 1 })),
    ]);
    expect(statements.some((text) => text.includes('jsonb_to_recordset'))).toBe(true);
    expect(receipts).toEqual([
      { written: true, mail: false },
      { written: false, mail: true },
      { written: true, mail: true },
      { written: true, mail: false },
    ]);
    const loaded = await Promise.all(held.map(({ runId }) => store.load(runId)));
    expect(loaded.map((found) => [found!.run.status, found!.run.owner])).toEqual([
      ['running', 'w'],
      ['running', 'w'],
      ['completed', null],
      ['running', 'w'],
    ]);
    expect(loaded[0]!.signals).toHaveLength(1);
  });

  it('sees, in a batch, a signal whose transaction held the row while the save waited', async () => {
    const { sql, harness } = opened();
    const store = harness.store();
    const other = await heldRun(store, 'calm');
    const { runId, lease } = await heldRun(store, 'race-batch');
    let saving: Promise<unknown[]> | undefined;
    await sql.begin(async (tx) => {
      await sendSignal(tx as unknown as Sql, harness.schema, runId, 'note');
      // The first goes alone; the two behind it share a batch statement, which skips the held row, then
      // sends its write again on its own, waiting for the row.
      saving = Promise.all([
        store.save(other.lease, step(1)),
        store.save(other.lease, step(2)),
        store.save(lease, completing(1)),
      ]);
      await sleep(300);
    });
    expect((await saving)!.at(-1)).toEqual({ written: false, mail: true });
    expect((await store.load(runId))!.run.status).toBe('running');
  });

  it('answers for a child run (its own mailbox, always empty) through the batch statement', async () => {
    const { sql, harness } = opened();
    const statements: string[] = [];
    const store = harness.store({ sql: watchedSql(sql, (text) => statements.push(text)) });
    const { runId, lease } = await heldRun(store, 'parent');
    const child = await childOf(store, lease);
    await store.signal(runId, { name: 'n', payload: 1 });
    statements.length = 0;
    expect(await store.save(child, step(1))).toEqual({ written: true, mail: false });
    expect(await store.save(child, { ...completing(2), release: false })).toEqual({
      written: true,
      mail: false,
    });
    expect(statements.some((text) => text.includes('jsonb_to_recordset'))).toBe(true);
    expect((await store.load(child.runId))!.run.status).toBe('completed');
    // A stale root epoch fences the child out first.
    await expect(store.save({ ...child, epoch: child.epoch + 1 }, step(3))).rejects.toMatchObject({
      name: 'LeaseLostError',
    });
  });
});
