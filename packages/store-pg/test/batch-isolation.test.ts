import { LeaseLostError, type Checkpoint, type JournalEntry } from '@cairn/sdk';
import type { PgStore } from '@cairn/store-pg';
import { describe, expect, it } from 'vitest';
import { usePgHarnessPerTest } from './support.js';

const pg = usePgHarnessPerTest('cairn_batch_isolation');

const long = 60_000;
const run = (runId: string) => ({
  runId,
  kind: 'agent',
  name: 'batch',
  signature: 's',
  snapshot: { step: 0 },
});
const mark = (seq: number, effectId: string): JournalEntry => ({
  seq,
  type: 'started',
  effectId,
  at: seq,
});
const checkpoint = (snapshot: Checkpoint['snapshot']): Checkpoint => ({
  status: 'running',
  signature: 's',
  snapshot,
  journalSeq: 0,
});
/** What a promise settled with: its value, or the error it was rejected with. */
const outcome = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (value) => value,
    (error: unknown) => error,
  );

describe('one bad payload in a batch (invariant 14)', () => {
  const bad = { NUL: 'nul \u0000 char', 'lone surrogate': `lone ${'😀'.slice(0, 1)} half` };

  for (const [kind, text] of Object.entries(bad)) {
    it(`stores a final output with a ${kind} as given, in a batch with others`, async () => {
      const store = pg.harness().store();
      const ids = ['occupier', ...Array.from({ length: 8 }, (_, n) => `b${n}`)];
      for (const id of ids) await store.create(run(id));
      const leases = await Promise.all(
        ids.map((id) => store.acquire(id, { owner: 'w', ttlMs: long })),
      );
      const payloadOf = (id: string) => (id === 'b3' ? text : `ok ${id}`);
      // Output and error are kept as JSON text (they were jsonb, which refused both): nothing to refuse.
      const send = (id: string) =>
        store.save(leases[ids.indexOf(id)]!, {
          ...checkpoint({ text: payloadOf(id) }),
          status: 'completed',
          output: payloadOf(id),
        });
      // The first write goes alone; the eight arriving while it is in flight share the next statement.
      const occupier = send('occupier');
      const settled = await Promise.all(ids.slice(1).map((id) => outcome(send(id))));
      await occupier;
      expect(settled.filter((result) => result instanceof Error)).toEqual([]);
      for (const id of ids.slice(1)) {
        expect((await store.load(id))?.run).toMatchObject({
          status: 'completed',
          output: payloadOf(id),
          snapshot: { text: payloadOf(id) },
        });
      }
    });
  }

  for (const [kind, text] of Object.entries(bad)) {
    it(`stores a journal entry with a ${kind} as given, in a batch with others`, async () => {
      const store = pg.harness().store();
      const ids = Array.from({ length: 6 }, (_, n) => `j${n}`);
      for (const id of ids) await store.create(run(id));
      const leases = await Promise.all(
        ids.map((id) => store.acquire(id, { owner: 'w', ttlMs: long })),
      );
      // A journal entry is kept as JSON text, which holds any string: nothing to refuse.
      await Promise.all(
        leases.map((lease, n) =>
          store.append(lease!, [
            {
              seq: 1,
              type: 'settled',
              effectId: 'e1',
              at: 1,
              outcome: { status: 'ok', value: n === 3 ? text : `ok ${n}` },
            },
          ]),
        ),
      );
      for (const [n, id] of ids.entries()) {
        const loaded = await store.load(id);
        expect(loaded?.journal[0]).toMatchObject({
          outcome: {
            status: 'ok',
            value: n === 3 ? text : `ok ${n}`,
          },
        });
      }
    });
  }
});

describe('a stale and a current write of one run sent together (invariant 1)', () => {
  /** A run held by `store` at epoch 2, and the stale lease of epoch 1. */
  async function heldTwice(store: PgStore, id: string) {
    await store.create(run(id));
    const first = (await store.acquire(id, { owner: 'w', ttlMs: long }))!;
    await store.release(first);
    return { stale: first, current: (await store.acquire(id, { owner: 'w', ttlMs: long }))! };
  }

  for (const write of ['save', 'append'] as const) {
    it(`${write}: the stale one is refused and the current one stored, in either order`, async () => {
      const store = pg.harness().store();
      await store.create(run('busy'));
      const busy = (await store.acquire('busy', { owner: 'w', ttlMs: long }))!;
      const problems: string[] = [];
      for (let i = 0; i < 20; i += 1) {
        const id = `${write}-${i}`;
        const { stale, current } = await heldTwice(store, id);
        const send = (lease: typeof stale, by: string) =>
          outcome(
            write === 'save'
              ? store.save(lease, checkpoint({ by }))
              : store.append(lease, [mark(1, by)]),
          );
        // Both arrive while a write of another run is in flight, in either order.
        const first =
          write === 'save'
            ? store.save(busy, checkpoint({ i }))
            : store.append(busy, [mark(i + 1, `busy-${i}`)]);
        const pair =
          i % 2 === 0
            ? (() => {
                const s = send(stale, 'stale');
                return Promise.all([s, send(current, 'current')]);
              })()
            : (() => {
                const c = send(current, 'current');
                return Promise.all([send(stale, 'stale'), c]);
              })();
        const [staleOutcome, currentOutcome] = await pair;
        await first;
        const loaded = await store.load(id);
        const stored =
          write === 'save' ? loaded?.run.snapshot : loaded?.journal.map((entry) => entry.effectId);
        const expected = write === 'save' ? { by: 'current' } : ['current'];
        if (!(staleOutcome instanceof LeaseLostError))
          problems.push(`${id}: stale ${write} accepted`);
        // A save answers its receipt (nothing here has mail), an append nothing.
        const accepted = write === 'save' ? { written: true, mail: false } : undefined;
        if (JSON.stringify(currentOutcome) !== JSON.stringify(accepted))
          problems.push(`${id}: current failed: ${String(currentOutcome)}`);
        if (JSON.stringify(stored) !== JSON.stringify(expected))
          problems.push(`${id}: stored ${JSON.stringify(stored)}`);
      }
      expect(problems).toEqual([]);
    });
  }
});

describe('the batch statements themselves', () => {
  // The batcher never puts two writes of one run in a statement; the statements must not rely on it. These
  // reach below the public API on purpose: they hand one statement a stale and a current write of one run.
  it('fence every write on its own row and report it by its own position', async () => {
    const { schemaNames } = await import('../src/names.js');
    const { saveCheckpoints } = await import('../src/sql/save-checkpoint.js');
    const { appendJournals } = await import('../src/sql/append-journal.js');
    const names = schemaNames(pg.harness().schema);
    const store = pg.harness().store();
    await store.create(run('r'));
    const stale = (await store.acquire('r', { owner: 'w', ttlMs: long }))!;
    await store.release(stale);
    const current = (await store.acquire('r', { owner: 'w', ttlMs: long }))!;
    const items = { chunks: [], cuts: [], paths: [], expectedVersion: null, trim: true };
    const saves = await saveCheckpoints(
      pg.sql(),
      names,
      [
        {
          fence: stale,
          checkpoint: checkpoint({ by: 'stale' }),
          inline: { by: 'stale' },
          items,
          stream: [],
        },
        {
          fence: current,
          checkpoint: checkpoint({ by: 'current' }),
          inline: { by: 'current' },
          items,
          stream: [],
        },
      ],
      true,
    );
    expect(saves[0]).toMatchObject({ type: 'refused' });
    expect(saves[1]).toMatchObject({ type: 'saved' });
    const appends = await appendJournals(
      pg.sql(),
      names,
      [
        { fence: current, entries: [mark(1, 'current')], stream: [] },
        { fence: stale, entries: [mark(1, 'stale')], stream: [] },
      ],
      true,
    );
    expect(appends[0]).toBeUndefined();
    expect(appends[1]).toBeInstanceOf(LeaseLostError);
    const loaded = await store.load('r');
    expect(loaded?.run.snapshot).toEqual({ by: 'current' });
    expect(loaded?.journal.map((entry) => entry.effectId)).toEqual(['current']);
  });
});
