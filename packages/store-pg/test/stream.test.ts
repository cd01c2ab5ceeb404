import { isCairnError, LeaseLostError, type Fence, type StreamChunk } from '@cairn/sdk';
import { pgStore, type PgStore } from '@cairn/store-pg';
import { describe, expect, it } from 'vitest';
import { childOf, sleep, usePgHarness, watchedSql } from './support.js';

const opened = usePgHarness('cairn_stream');
const long = 60_000;
let runs = 0;

/** A new root run held by `store`. */
async function held(store: PgStore, prefix: string, ttlMs = long) {
  const runId = `${prefix}-${(runs += 1)}`;
  await store.create({ runId, kind: 'agent', name: 'n', signature: 's', snapshot: null });
  return (await store.acquire(runId, { owner: 'w', ttlMs }))!;
}

/** `count` text chunks of `unit` from `from`. */
const said = (from: number, count: number, unit = 'trip-1'): StreamChunk[] =>
  Array.from({ length: count }, (_, i) => ({
    position: from + i,
    unit,
    part: { type: 'text', text: `${unit} ${from + i}` },
    at: from + i,
  }));

const positions = (chunks: readonly StreamChunk[]) => chunks.map((chunk) => chunk.position);

/** What a promise settled with: its value, or the error it was rejected with. */
const outcome = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (value) => value,
    (error: unknown) => error,
  );

/** The stream rows stored for an incarnation, read from the table itself. */
async function rowsOf(incarnation: string): Promise<number> {
  const { sql, harness } = opened();
  const rows = await sql.unsafe(
    `SELECT count(*)::int AS n FROM "${harness.schema}".run_stream WHERE run_seq = $1::bigint`,
    [incarnation],
  );
  return rows[0]!.n as number;
}

describe('stream appends of many runs', () => {
  it('share statements, each fenced on its own row: the stale ones are refused and the rest land', async () => {
    const { sql, harness } = opened();
    let statements = 0;
    const watched = watchedSql(sql, (text) => {
      if (/INSERT INTO [^ ]+\."run_stream"/.test(text)) statements += 1;
    });
    const store = pgStore({ sql: watched, schema: harness.schema });
    const leases = await Promise.all(Array.from({ length: 30 }, () => held(store, 'many')));
    // A child, fenced by its root's row too, in the same batch as its root.
    const root = leases[0]!;
    const child = await childOf(store, root);
    const childId = child.runId;
    const taken = leases[1]!;
    await store.release(taken);
    const takenAgain = (await store.acquire(taken.runId, { owner: 'x', ttlMs: long }))!;

    const fences: Fence[] = [
      ...leases.map((lease, n) => (n === 7 ? { ...lease, epoch: lease.epoch + 1 } : lease)),
      child,
    ];
    const before = statements;
    const results = await Promise.all(
      fences.map((fence, n) => outcome(store.appendStream(fence, said(1, 3, `u${n}`)))),
    );
    const refused = results.flatMap((result, n) => (result === undefined ? [] : [n]));
    // Run 1 was taken by another holder (epoch 2), run 7 named a wrong epoch.
    expect(refused).toEqual([1, 7]);
    expect(results[1]).toBeInstanceOf(LeaseLostError);
    expect(results[7]).toBeInstanceOf(LeaseLostError);
    expect(statements - before).toBeLessThan(fences.length / 4);
    for (const [n, fence] of fences.entries()) {
      const stored = await store.readStream(fence.runId);
      expect(stored).toEqual(refused.includes(n) ? [] : said(1, 3, `u${n}`));
    }
    // Once another holder took its root, the child's old fence is refused; adopted again, it goes on.
    await store.release(root);
    const rootAgain = (await store.acquire(root.runId, { owner: 'w', ttlMs: long }))!;
    await expect(store.appendStream(child, said(4, 1))).rejects.toBeInstanceOf(LeaseLostError);
    const adopted = (await store.adopt(childId, rootAgain))!;
    await store.appendStream(adopted, said(4, 1, 'again'));
    expect(positions(await store.readStream(childId))).toEqual([1, 2, 3, 4]);
    await store.appendStream(takenAgain, said(1, 2));
    expect(await store.streamPosition(taken.runId)).toBe(2);
    await store.close();
  });

  it('fails only the write Postgres refuses (a NUL in a unit): the others of its batch land', async () => {
    const store = opened().harness.store();
    const leases = await Promise.all(Array.from({ length: 8 }, () => held(store, 'nul')));
    const unitOf = (n: number) => (n === 3 ? 'trip \u0000 1' : `trip ${n}`);
    // The first goes alone; the seven arriving while it is in flight share the next statement.
    const results = await Promise.all(
      leases.map((lease, n) => outcome(store.appendStream(lease, said(1, 2, unitOf(n))))),
    );
    expect(results.map((result, n) => (result === undefined ? n : -1))).toEqual([
      0, 1, 2, -1, 4, 5, 6, 7,
    ]);
    expect(isCairnError(results[3]) && results[3].code).toBe('STORE_FAILED');
    expect(isCairnError(results[3]) && results[3].data.runId).toBe(leases[3]!.runId);
    for (const [n, lease] of leases.entries()) {
      expect(await store.readStream(lease.runId)).toEqual(n === 3 ? [] : said(1, 2, unitOf(n)));
    }
  });
});

describe('chunks that ride with checkpoints', () => {
  it('are written by the batch statement of many runs’ checkpoints, each run its own, a stale one none', async () => {
    const { sql, harness } = opened();
    let statements = 0;
    const watched = watchedSql(sql, (text) => {
      if (/INSERT INTO [^ ]+\."run_stream"/.test(text)) statements += 1;
    });
    const store = pgStore({ sql: watched, schema: harness.schema });
    const leases = await Promise.all(Array.from({ length: 20 }, () => held(store, 'ride')));
    await Promise.all(leases.map((lease, n) => store.appendStream(lease, said(1, 1, `u${n}`))));
    const fences = leases.map((lease, n) =>
      n === 3 ? { ...lease, epoch: lease.epoch + 1 } : lease,
    );
    const before = statements;
    const results = await Promise.all(
      fences.map((fence, n) =>
        outcome(
          store.save(fence, {
            status: 'running',
            signature: 's',
            snapshot: { n },
            journalSeq: 0,
            stream: said(2, 2, `u${n}`),
          }),
        ),
      ),
    );
    expect(results[3]).toBeInstanceOf(LeaseLostError);
    // Batched: far fewer statements than checkpoints (each checkpoint statement holds the insert).
    expect(statements - before).toBeLessThan(fences.length / 2);
    for (const [n, lease] of leases.entries()) {
      const stored = await store.readStream(lease.runId);
      expect(stored).toEqual(
        n === 3 ? said(1, 1, `u${n}`) : [...said(1, 1, `u${n}`), ...said(2, 2, `u${n}`)],
      );
    }
    await store.close();
  });
});

describe('one run, under the row lock', () => {
  it('counts what an append that held the row lock committed while this one waited for it', async () => {
    const { sql, harness } = opened();
    const store = harness.store();
    const lease = await held(store, 'retry');
    const table = `"${harness.schema}".run_stream`;
    let commit!: () => void;
    const committed = new Promise<void>((resolve) => (commit = resolve));
    let wrote!: () => void;
    const written = new Promise<void>((resolve) => (wrote = resolve));
    // The first try of an append, still in flight: it holds the row and wrote 1..3, uncommitted.
    const first = sql.begin(async (tx) => {
      await tx.unsafe(`SELECT 1 FROM "${harness.schema}".runs WHERE run_id = $1 FOR UPDATE`, [
        lease.runId,
      ]);
      for (const chunk of said(1, 3)) {
        await tx.unsafe(
          `INSERT INTO ${table} (run_seq, position, at, unit, part) VALUES ($1, $2, $3, $4, $5)`,
          [lease.incarnation, chunk.position, chunk.at, chunk.unit, JSON.stringify(chunk.part)],
        );
      }
      wrote();
      await committed;
    });
    await written;
    // Its retry, sent after an unknown outcome, goes on to 4; it waits for the row.
    const retry = store.appendStream(lease, said(1, 4));
    while (
      (
        await sql`SELECT count(*)::int AS n FROM pg_stat_activity
                   WHERE datname = current_database() AND wait_event_type = 'Lock'`
      )[0]!.n === 0
    ) {
      await sleep(20);
    }
    commit();
    await first;
    await retry;
    expect(await store.readStream(lease.runId)).toEqual(said(1, 4));
  });

  it('never lets a holder that lost its lease append after the next one claimed the run', async () => {
    const stores = [opened().harness.store(), opened().harness.store()];
    let lease = await held(stores[0]!, 'race');
    const { runId } = lease;
    const problems: string[] = [];
    // Each round, the holder appends without pause while the other store claims the run from it.
    for (let round = 0; round < 30; round += 1) {
      const holder = stores[round % 2]!;
      const claimer = stores[(round + 1) % 2]!;
      const current = lease;
      let position = await holder.streamPosition(runId);
      let started!: () => void;
      const going = new Promise<void>((resolve) => (started = resolve));
      const appending = (async () => {
        for (let n = 0; ; n += 1) {
          if (n === 3) started();
          const error = await outcome(holder.appendStream(current, said(position + 1, 2)));
          if (error !== undefined) return error;
          position += 2;
        }
      })();
      await going;
      // A release leaves the epoch as it is: only the claim fences the holder out.
      await holder.release(current);
      lease = (await claimer.acquire(runId, { owner: `w${round}`, ttlMs: long }))!;
      const seen = await claimer.streamPosition(runId);
      const error = await appending;
      if (!(error instanceof LeaseLostError)) problems.push(`round ${round}: ${String(error)}`);
      const after = await claimer.streamPosition(runId);
      if (after !== seen) problems.push(`round ${round}: ${seen} at the claim, ${after} after it`);
    }
    expect(problems).toEqual([]);
    const stored = positions(await stores[0]!.readStream(runId, { limit: 10_000 }));
    expect(stored).toEqual(stored.map((_, i) => i + 1));
  });

  it('locks the runs row without rewriting it', async () => {
    const { sql, harness } = opened();
    const store = harness.store();
    const lease = await held(store, 'narrow');
    const version = async () =>
      (
        await sql.unsafe(`SELECT xmin::text AS v FROM "${harness.schema}".runs WHERE run_id = $1`, [
          lease.runId,
        ])
      )[0]!.v as string;
    const before = await version();
    await store.appendStream(lease, said(1, 5));
    await store.appendStream(lease, said(6, 5));
    expect(await version()).toBe(before);
    expect(await store.streamPosition(lease.runId)).toBe(10);
  });
});

describe('stream rows go with their run', () => {
  it('on delete, on prune, and a child with its parent', async () => {
    const store = opened().harness.store();
    const ended = async (prefix: string) => {
      const lease = await held(store, prefix);
      await store.appendStream(lease, said(1, 3));
      const child = await childOf(store, lease);
      await store.appendStream(child, said(1, 2));
      await store.save(lease, {
        status: 'completed',
        signature: 's',
        snapshot: null,
        output: 'done',
        journalSeq: 0,
        release: true,
      });
      return { lease, child };
    };
    const deleted = await ended('delete');
    const pruned = await ended('prune');
    for (const { lease, child } of [deleted, pruned]) {
      expect(await rowsOf(lease.incarnation)).toBe(3);
      expect(await rowsOf(child.incarnation)).toBe(2);
    }
    expect(await store.delete(deleted.lease.runId)).toBe(true);
    expect(await store.prune({ olderThan: Date.now() + long })).toBeGreaterThanOrEqual(1);
    for (const { lease, child } of [deleted, pruned]) {
      expect(await rowsOf(lease.incarnation)).toBe(0);
      expect(await rowsOf(child.incarnation)).toBe(0);
      expect(await store.readStream(lease.runId)).toEqual([]);
    }
  });
});
