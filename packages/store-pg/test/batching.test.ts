import { LeaseLostError } from '@cairn/sdk';
import { pgStore } from '@cairn/store-pg';
import type { Sql } from 'postgres';
import { describe, expect, it } from 'vitest';
import { usePgHarness, watchedSql } from './support.js';

const opened = usePgHarness('cairn_batching');

/** A `sql` that counts the statements that write checkpoints or journal entries. */
function counting(inner: Sql): { sql: Sql; writes: () => number } {
  let writes = 0;
  const sql = watchedSql(inner, (text) => {
    if (/INSERT INTO [^ ]+\."(journal|snapshot_chunks)"/.test(text)) writes += 1;
  });
  return { sql, writes: () => writes };
}

describe('writes of many runs', () => {
  it('share statements when they arrive together, each still fenced by its own epoch', async () => {
    const { sql, harness } = opened();
    const { sql: countingSql, writes } = counting(sql);
    const store = pgStore({ sql: countingSql, schema: harness.schema });
    const ids = Array.from({ length: 40 }, (_, n) => `batch-${n}`);
    for (const runId of ids)
      await store.create({ runId, kind: 'agent', name: 'a', signature: 's', snapshot: null });
    const leases = await Promise.all(
      ids.map((runId) => store.acquire(runId, { owner: 'w', ttlMs: 60_000 })),
    );
    // One run is written with a stale epoch: it alone is refused.
    const before = writes();
    const results = await Promise.allSettled(
      leases.map((lease, n) =>
        store.append(n === 7 ? { ...lease!, epoch: lease!.epoch + 1 } : lease!, [
          { seq: 1, type: 'started', effectId: `e-${n}`, at: 1 },
        ]),
      ),
    );
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1);
    expect((results[7] as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLostError);
    const appendStatements = writes() - before;
    expect(appendStatements).toBeLessThan(ids.length / 4);

    const saved = await Promise.allSettled(
      leases.map((lease, n) =>
        store.save(lease!, {
          status: 'running',
          signature: 's',
          snapshot: { n, messages: Array.from({ length: 5 }, (_, m) => `m${m}`) },
          journalSeq: 1,
        }),
      ),
    );
    expect(saved.every((r) => r.status === 'fulfilled')).toBe(true);
    for (const [n, runId] of ids.entries()) {
      const loaded = await store.load(runId);
      expect(loaded?.run.snapshot).toEqual({ n, messages: ['m0', 'm1', 'm2', 'm3', 'm4'] });
      expect(loaded?.journal).toEqual([]);
    }
    await Promise.all(leases.map((lease) => store.release(lease!)));
    await store.close();
  });

  it('creates runs started together in one statement, and a repeated id returns the first', async () => {
    const { sql, harness } = opened();
    const { sql: countingSql } = counting(sql);
    let inserts = 0;
    const watched = watchedSql(countingSql, (text) => {
      if (/^\s*INSERT INTO [^ ]+\."runs"/.test(text)) inserts += 1;
    });
    const store = pgStore({ sql: watched, schema: harness.schema });
    const ids = [...Array.from({ length: 30 }, (_, n) => `start-${n}`), 'start-3', 'start-4'];
    const created = await Promise.all(
      ids.map((runId, n) =>
        store.create({
          runId,
          kind: 'agent',
          name: 'a',
          signature: 's',
          snapshot: { n },
          status: 'queued',
        }),
      ),
    );
    expect(created.filter((c) => c.created)).toHaveLength(30);
    expect(created.slice(30).map((c) => [c.created, c.run.snapshot])).toEqual([
      [false, { n: 3 }],
      [false, { n: 4 }],
    ]);
    expect(inserts).toBeLessThan(10);
    expect((await store.list({ status: 'queued' })).length).toBe(30);
    await store.close();
  });
});
