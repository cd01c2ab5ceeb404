import { isCairnError, type JsonValue } from '@cairn/sdk';
import type { PgStore } from '@cairn/store-pg';
import { describe, expect, it } from 'vitest';
import { usePgHarnessPerTest } from './support.js';

// Issue 31: one corrupted row harms one run, never a batch or a listing. Rows are changed here as a hand-written
// UPDATE during an incident, a partial restore or a disk would change them.
const pg = usePgHarnessPerTest('cairn_corrupted_chunks');
const definitions = [{ kind: 'agent', name: 'chunky' }];
const records = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ t: 'signals', s: i + 1, at: 1_000 + i, names: ['x'] }));
/** A snapshot with long arrays (stored as chunk rows): a conversation and a history. */
const snapshot = (n: number): JsonValue => ({
  format: 1,
  state: { messages: Array.from({ length: n }, (_, i) => ({ role: 'user', content: `m${i}` })) },
  pending: [],
  journalSeq: n,
  history: { v: 1, records: records(n) },
});

/** A run that nobody holds, with a checkpoint whose arrays are stored as chunk rows. */
async function seeded(store: PgStore, runId: string, n = 6): Promise<void> {
  await store.create({ runId, kind: 'agent', name: 'chunky', signature: 's', snapshot: null });
  const lease = (await store.acquire(runId, { owner: 'seed', ttlMs: 60_000 }))!;
  await store.save(lease, {
    status: 'running',
    signature: 's',
    snapshot: snapshot(n),
    journalSeq: n,
    release: true,
  });
}

/** Runs `statement` on the chunk rows of `runId` whose path is `path` ({chunks} is the table). */
async function changeChunks(runId: string, path: string[], statement: string): Promise<number> {
  const { schema } = pg.harness();
  const result = await pg.sql().unsafe(
    `${statement.replace('{chunks}', `"${schema}".snapshot_chunks`)}
      WHERE run_seq = (SELECT created_seq FROM "${schema}".runs WHERE run_id = $1) AND path = $2`,
    [runId, JSON.stringify(path)],
  );
  return result.count;
}

const invalid = (error: unknown) => isCairnError(error) && error.code === 'SNAPSHOT_INVALID';

describe('a run with a chunk row that is not JSON', () => {
  it('is one run’s SNAPSHOT_INVALID in a batch claim: the healthy runs beside it are claimed as read', async () => {
    const store = pg.harness().store();
    for (const runId of ['a', 'b', 'c']) await seeded(store, runId);
    expect(
      await changeChunks('b', ['state', 'messages'], `UPDATE {chunks} SET items = '[{"role'`),
    ).toBe(1);
    const leases = await store.claim!({ owner: 'w', ttlMs: 60_000, limit: 10, definitions });
    const byId = new Map(leases.map((lease) => [lease.runId, lease]));
    for (const healthy of ['a', 'c'])
      expect(byId.get(healthy)?.claimed?.run.snapshot).toEqual(snapshot(6));
    // The corrupted one is not handed over as read: whoever performs it meets SNAPSHOT_INVALID, and gives it back.
    expect(byId.get('b')?.claimed).toBeUndefined();
    await expect(store.load('b')).rejects.toSatisfy(invalid);
  });

  it('is marked in a listing, which shows every other run', async () => {
    const store = pg.harness().store();
    for (const runId of ['a', 'b', 'c']) await seeded(store, runId);
    await changeChunks('b', ['state', 'messages'], `UPDATE {chunks} SET items = 'not json'`);
    const listed = await store.list();
    expect(listed.map((run) => run.runId)).toEqual(['a', 'b', 'c']);
    expect(listed[1]).toMatchObject({ runId: 'b', snapshot: null, unreadable: expect.any(String) });
    expect(listed[0]).toMatchObject({ snapshot: snapshot(6) });
    expect(listed[0]!.unreadable).toBeUndefined();
  });

  it('with a path that is not JSON: the same', async () => {
    const store = pg.harness().store();
    for (const runId of ['a', 'b']) await seeded(store, runId);
    await changeChunks('b', ['state', 'messages'], `UPDATE {chunks} SET path = '["state",'`);
    expect((await store.list()).map((run) => [run.runId, run.unreadable === undefined])).toEqual([
      ['a', true],
      ['b', false],
    ]);
    await expect(store.load('b')).rejects.toSatisfy(invalid);
  });
});

describe('a run whose history rows were corrupted', () => {
  it('reads with its history as truncated when a history row is not JSON: history never refuses a run', async () => {
    const store = pg.harness().store();
    await seeded(store, 'h');
    await changeChunks('h', ['history', 'records'], `UPDATE {chunks} SET items = '[{"t":'`);
    const { run } = (await store.load('h'))!;
    const loaded = run.snapshot as { state: unknown; history: { records: unknown } };
    expect(loaded.state).toEqual((snapshot(6) as { state: unknown }).state);
    expect(loaded.history.records).toBeNull();
  });

  it('reads with its history as truncated when history rows were deleted', async () => {
    const store = pg.harness().store();
    await seeded(store, 'h');
    expect(await changeChunks('h', ['history', 'records'], 'DELETE FROM {chunks}')).toBeGreaterThan(
      0,
    );
    const loaded = (await store.load('h'))!.run.snapshot as { history: { records: unknown } };
    expect(loaded.history.records).toBeNull();
  });
});

describe('a run whose chunk rows were moved to another path', () => {
  it('is SNAPSHOT_INVALID: its rows must land where the checkpoint took them from', async () => {
    const store = pg.harness().store();
    await seeded(store, 'moved');
    await changeChunks(
      'moved',
      ['state', 'messages'],
      `UPDATE {chunks} SET path = '["state","notes"]'`,
    );
    await expect(store.load('moved')).rejects.toSatisfy(invalid);
  });
});
