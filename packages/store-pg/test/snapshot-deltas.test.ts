import type { JsonValue, Lease } from '@cairn/sdk';
import { pgStore, type PgStore } from '@cairn/store-pg';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Sql } from 'postgres';
import { describe, expect, it } from 'vitest';
import { usePgHarness, watchedSql } from './support.js';

const opened = usePgHarness('cairn_snapshot_deltas');

/** A `sql` that counts the bytes of the parameters every statement sends. */
function metered(inner: Sql): { sql: Sql; sent: () => number } {
  let bytes = 0;
  const sql = watchedSql(inner, (_text, params) => {
    for (const param of params) bytes += typeof param === 'string' ? param.length : 8;
  });
  return { sql, sent: () => bytes };
}

const message = (n: number) => ({
  role: n % 2 === 0 ? 'user' : 'assistant',
  content: `message ${n} `.repeat(20),
});
const snapshotAt = (length: number) => ({
  format: 1,
  state: { messages: Array.from({ length }, (_, n) => message(n)), trips: length },
  pending: [],
  journalSeq: length,
});

describe('checkpoints of a growing conversation', () => {
  it('send only what is new, and load back exactly what was saved', async () => {
    const { sql, harness } = opened();
    const { sql: meteredSql, sent } = metered(sql);
    const store: PgStore = pgStore({ sql: meteredSql, schema: harness.schema });
    const { run } = await store.create({
      runId: 'grows',
      kind: 'agent',
      name: 'a',
      signature: 's',
      snapshot: snapshotAt(1),
    });
    const lease = (await store.acquire(run.runId, { owner: 'w', ttlMs: 60_000 }))!;
    const perSave: number[] = [];
    for (let length = 2; length <= 60; length += 2) {
      const before = sent();
      await store.save(lease, {
        status: 'running',
        signature: 's',
        journalSeq: 0,
        snapshot: snapshotAt(length),
      });
      perSave.push(sent() - before);
      if (length % 20 === 0)
        expect((await store.load('grows'))?.run.snapshot).toEqual(snapshotAt(length));
    }
    const fullSnapshot = JSON.stringify(snapshotAt(60)).length;
    // The last checkpoint sends two messages' worth, not the 60-message conversation.
    expect(perSave.at(-1)!).toBeLessThan(fullSnapshot / 10);
    expect(Math.max(...perSave.slice(2))).toBeLessThan(perSave[2]! * 2);
    await store.release(lease);
    await store.close();
  });

  it('writes in full when another store wrote since, and stays exact', async () => {
    const { sql, harness } = opened();
    const first = harness.store();
    const second = harness.store();
    await first.create({
      runId: 'shared',
      kind: 'agent',
      name: 'a',
      signature: 's',
      snapshot: snapshotAt(1),
    });
    const a = (await first.acquire('shared', { owner: 'a', ttlMs: 60_000 }))!;
    await first.save(a, {
      status: 'running',
      signature: 's',
      journalSeq: 0,
      snapshot: snapshotAt(10),
    });
    await first.release(a);

    // Another worker continues the run and rewrites an element in place.
    const b = (await second.acquire('shared', { owner: 'b', ttlMs: 60_000 }))!;
    const rewritten = snapshotAt(12);
    rewritten.state.messages[3] = { role: 'assistant', content: 'edited' };
    await second.save(b, {
      status: 'running',
      signature: 's',
      journalSeq: 0,
      snapshot: rewritten,
    });
    await second.release(b);

    // The first store's record of what is stored is stale: its next save must not build on it.
    const c = (await first.acquire('shared', { owner: 'a', ttlMs: 60_000 }))!;
    const shorter = snapshotAt(6);
    await first.save(c, { status: 'running', signature: 's', snapshot: shorter, journalSeq: 0 });
    expect((await second.load('shared'))?.run.snapshot).toEqual(shorter);
    const rows = await sql.unsafe(
      `select coalesce(sum(json_array_length(items::json)), 0)::int as n
         from "${harness.schema}".snapshot_chunks
        where run_seq = (select created_seq from "${harness.schema}".runs where run_id = 'shared')`,
    );
    expect(rows[0]?.n).toBe(6);

    // A snapshot whose array shrinks below the split size keeps no rows.
    await first.save(c, {
      status: 'completed',
      signature: 's',
      journalSeq: 0,
      snapshot: snapshotAt(2),
      output: 'done',
    });
    expect((await first.load('shared'))?.run).toMatchObject({
      snapshot: snapshotAt(2),
      output: 'done',
      status: 'completed',
    });
    const left = await sql.unsafe(
      `select coalesce(sum(json_array_length(items::json)), 0)::int as n
         from "${harness.schema}".snapshot_chunks
        where run_seq = (select created_seq from "${harness.schema}".runs where run_id = 'shared')`,
    );
    expect(left[0]?.n).toBe(0);
  });

  it('keeps nothing of a run it gave up, by a final checkpoint or by a release', async () => {
    const { harness } = opened();
    const store = harness.store();
    // What the store could keep of a checkpoint: the conversation's elements it sends as rows.
    const kept = async (
      runId: string,
      giveUp: (lease: Lease, snapshot: unknown) => Promise<unknown>,
    ) => {
      await store.create({ runId, kind: 'agent', name: 'a', signature: 's', snapshot: null });
      const lease = (await store.acquire(runId, { owner: 'w', ttlMs: 60_000 }))!;
      const snapshot = snapshotAt(8);
      await store.save(lease, { status: 'running', signature: 's', journalSeq: 0, snapshot });
      await giveUp(lease, snapshot);
      return new WeakRef(snapshot.state.messages[5]!);
    };
    const waiting = await kept('parked', (lease, snapshot) =>
      store.save(lease, {
        status: 'waiting',
        signature: 's',
        journalSeq: 0,
        snapshot: snapshot as JsonValue,
        release: true,
        wait: { until: null, signals: ['approve'] },
      }),
    );
    const handedOver = await kept('handed-over', (lease) => store.release(lease));
    const gc = collector();
    // A WeakRef holds its target until the task that made it ends.
    await new Promise((resolve) => setTimeout(resolve, 0));
    gc();
    gc();
    // A run given up is loaded again by whoever claims it next, this store included: nothing kept serves it.
    expect(waiting.deref()).toBeUndefined();
    expect(handedOver.deref()).toBeUndefined();
    await store.close();
  });
});

/** A full collection: `global.gc` under --expose-gc, else switched on here. */
function collector(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed !== undefined) return exposed;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}
