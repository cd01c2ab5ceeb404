import type { PgStore } from '@cairn/store-pg';
import type { Sql } from 'postgres';
import { describe, expect, it } from 'vitest';
import { sleep, usePgHarness } from './support.js';

const opened = usePgHarness('cairn_send_signal');
const definitions = [{ kind: 'agent', name: 'approver' }];
let runs = 0;

/** A root run parked by its holder until a signal `approve` (or a time far away). */
async function waitingForApproval(store: PgStore): Promise<string> {
  const { runId, lease } = await heldRun(store, 'approval');
  await store.save(lease, {
    status: 'waiting',
    signature: 's',
    snapshot: {},
    journalSeq: 0,
    release: true,
    wait: { until: 1e15, signals: ['approve'] },
  });
  return runId;
}

/** A new root run, held by the worker `w` under a lease of `ttlMs`. */
async function heldRun(store: PgStore, prefix: string, ttlMs = 60_000) {
  const runId = `${prefix}-${(runs += 1)}`;
  await store.create({ runId, kind: 'agent', name: 'approver', signature: 's', snapshot: null });
  const lease = (await store.acquire(runId, { owner: 'w', ttlMs }))!;
  return { runId, lease };
}

/** Whether a claim at time 0 (so only a signal or a cancel can make it due) would take the run. */
async function isDue(store: PgStore, runId: string): Promise<boolean> {
  return (await store.claimable({ limit: 1000, definitions, now: 0 })).includes(runId);
}

/** Calls `send_signal` as an application does, in the transaction `tx` (or on its own). */
function sendSignal(tx: Sql, schema: string, runId: string, name: string, key?: string) {
  return tx<Array<{ seq: string; duplicate: boolean }>>`
    SELECT seq, duplicate
      FROM ${tx(schema)}.send_signal(${runId}, ${name}, ${tx.json({ approved: true })}, ${key ?? null})`;
}

/** Resolves with the number of wake-ups `subscribe` delivered within `ms`. */
async function wakeUps(store: PgStore, during: () => Promise<void>, ms = 500): Promise<number[]> {
  const seen: number[] = [];
  const started = Date.now();
  const unlisten = await store.subscribe!(() => seen.push(Date.now() - started));
  try {
    await during();
    await sleep(ms);
  } finally {
    await unlisten();
  }
  return seen;
}

describe('send_signal in the application’s own transaction', () => {
  it('sends nothing when the transaction rolls back', async () => {
    const { sql, harness } = opened();
    const store = harness.store();
    const runId = await waitingForApproval(store);
    await sql
      .begin(async (tx) => {
        const [receipt] = await sendSignal(tx as unknown as Sql, harness.schema, runId, 'approve');
        expect(receipt).toEqual({ seq: '1', duplicate: false });
        throw new Error('the order failed');
      })
      .catch(() => undefined);
    expect(await store.mailbox(runId)).toEqual([]);
    expect(await isDue(store, runId)).toBe(false);
    // The seq it took is given again: nothing of the rolled-back signal is left.
    expect(await store.signal(runId, { name: 'note', payload: 1 })).toEqual({
      seq: 1,
      duplicate: false,
    });
  });

  it('delivers the signal at commit, and wakes a subscribed worker then, not before', async () => {
    const { sql, harness } = opened();
    const store = harness.store();
    const runId = await waitingForApproval(store);
    let committedAt = 0;
    const seen = await wakeUps(store, async () => {
      const started = Date.now();
      await sql.begin(async (tx) => {
        await tx.unsafe(`SELECT 1`);
        await sendSignal(tx as unknown as Sql, harness.schema, runId, 'approve', 'order-7');
        // The application keeps working in its transaction: no worker hears of the signal yet.
        await sleep(300);
        expect(await isDue(store, runId)).toBe(false);
      });
      committedAt = Date.now() - started;
    });
    expect(seen.length).toBeGreaterThanOrEqual(1);
    expect(seen[0]!).toBeGreaterThanOrEqual(committedAt - 50);
    expect(await isDue(store, runId)).toBe(true);
    expect(await store.mailbox(runId)).toMatchObject([
      { seq: 1, name: 'approve', payload: { approved: true }, idempotencyKey: 'order-7' },
    ]);
  });

  it('does not wake workers for a signal the run does not wait for', async () => {
    const { sql, harness } = opened();
    const store = harness.store();
    const runId = await waitingForApproval(store);
    const seen = await wakeUps(store, async () => {
      await sendSignal(sql, harness.schema, runId, 'note');
    });
    expect(seen).toEqual([]);
    expect(await isDue(store, runId)).toBe(false);
  });

  it('accepts exactly one of 20 concurrent signals with one key, in 20 transactions', async () => {
    const { sql, harness } = opened();
    const store = harness.store();
    const runId = await waitingForApproval(store);
    await store.signal(runId, { name: 'note', payload: 0 });
    const receipts = await Promise.all(
      Array.from({ length: 20 }, () =>
        sql.begin(async (tx) => {
          const [receipt] = await sendSignal(
            tx as unknown as Sql,
            harness.schema,
            runId,
            'approve',
            'k',
          );
          return receipt!;
        }),
      ),
    );
    expect(receipts.filter((r) => !r.duplicate)).toHaveLength(1);
    expect(new Set(receipts.map((r) => r.seq))).toEqual(new Set(['2']));
    // And through the store, racing the same way.
    const viaStore = await Promise.all(
      Array.from({ length: 20 }, () =>
        store.signal(runId, { name: 'approve', payload: 2, idempotencyKey: 'k2' }),
      ),
    );
    expect(viaStore.filter((r) => !r.duplicate)).toHaveLength(1);
    expect(new Set(viaStore.map((r) => r.seq))).toEqual(new Set([3]));
    expect((await store.mailbox(runId)).map((s) => s.seq)).toEqual([1, 2, 3]);
  });

  it('leaves the holder’s renewals alone while the application’s transaction is open', async () => {
    const { sql, harness } = opened();
    const store = harness.store();
    const { runId, lease } = await heldRun(store, 'held', 3_000);
    await sql.begin(async (tx) => {
      await sendSignal(tx as unknown as Sql, harness.schema, runId, 'approve');
      const renewed = await store.renew(lease, 3_000);
      expect(renewed.leaseUntil).toBeGreaterThan(lease.leaseUntil);
    });
    // A signal sent meanwhile would have waited for that transaction: seqs are given in order.
    expect(await store.signal(runId, { name: 'note', payload: 1 })).toEqual({
      seq: 2,
      duplicate: false,
    });
    expect((await store.mailbox(runId)).map((s) => s.seq)).toEqual([1, 2]);
    await store.release(lease);
  });

  it('wakes a wait whose checkpoint waited for the row a signal’s transaction held', async () => {
    const { sql, harness } = opened();
    const store = harness.store();
    const { runId, lease } = await heldRun(store, 'race');
    let saving: Promise<unknown> | undefined;
    await sql.begin(async (tx) => {
      await sendSignal(tx as unknown as Sql, harness.schema, runId, 'approve');
      // The holder parks the run while the signal is not committed: its checkpoint waits for the row.
      saving = store.save(lease, {
        status: 'waiting',
        signature: 's',
        snapshot: {},
        journalSeq: 0,
        release: true,
        wait: { until: null, signals: ['approve'] },
      });
      await sleep(200);
    });
    await saving;
    expect(await isDue(store, runId)).toBe(true);
  });

  it('raises the SQLSTATEs store.signal turns into typed errors', async () => {
    const { sql, harness } = opened();
    const store = harness.store();
    const codeOf = (runId: string, name: string) =>
      sendSignal(sql, harness.schema, runId, name).then(
        () => 'accepted',
        (error: { code: string }) => error.code,
      );
    expect(await codeOf('nobody', 'approve')).toBe('P0002');
    expect(await codeOf('nobody', '')).toBe('22023');
    const { runId, lease } = await heldRun(store, 'ended');
    await store.updateStatus(lease, { status: 'failed' });
    expect(await codeOf(runId, 'approve')).toBe('55000');
    const big = await sql
      .unsafe(
        `SELECT * FROM "${harness.schema}".send_signal('nobody', 'x', to_jsonb(repeat('a', 1000001)))`,
      )
      .catch((error: { code: string }) => error.code);
    expect(big).toBe('22023');
  });

  it('checks a decision sent with send_signal as store.signal does: a wrong one keeps nothing, burns no key', async () => {
    const { sql, harness } = opened();
    const store = harness.store();
    const { runId, lease } = await heldRun(store, 'decision');
    const argsHash = 'a'.repeat(64);
    await store.save(lease, {
      status: 'waiting',
      signature: 's',
      snapshot: {},
      journalSeq: 0,
      release: true,
      wait: {
        until: null,
        signals: ['cairn.approval'],
        detail: {
          approvals: [{ callId: 'c1', tool: 'refund', args: {}, argsHash, deadline: null }],
        },
      },
    });
    const raw = (payload: object, key: string | null) =>
      sql<Array<{ seq: string; duplicate: boolean }>>`
        SELECT seq, duplicate FROM ${sql(harness.schema)}.send_signal(
          ${runId}, 'cairn.approval', ${sql.json(payload as never)}, ${key})`.then(
        (rows) => rows[0],
        (error: { code: string; hint?: string; detail?: string }) => error,
      );
    // The key the client used to give approvals, with the wrong hash: refused, nothing kept.
    const wrong = await raw(
      { callId: 'c1', approved: true, argsHash: 'b'.repeat(64) },
      'cairn.approval:c1',
    );
    expect(wrong).toMatchObject({ code: '22023', hint: 'cairn.decision' });
    expect(JSON.parse((wrong as { detail: string }).detail)).toMatchObject({
      reason: 'other arguments',
      argsHash,
    });
    expect(await store.mailbox(runId)).toEqual([]);
    expect(await isDue(store, runId)).toBe(false);
    // The right decision, through the store: accepted and waking the run.
    expect(
      await store.signal(runId, {
        name: 'cairn.approval',
        payload: { callId: 'c1', approved: true, argsHash },
      }),
    ).toMatchObject({ seq: 1, duplicate: false, decision: { approved: true, argsHash } });
    expect(await isDue(store, runId)).toBe(true);
    // Sent raw again: the standing one answers.
    expect(await raw({ callId: 'c1', approved: false }, null)).toEqual({
      seq: '1',
      duplicate: true,
    });
  });
});
