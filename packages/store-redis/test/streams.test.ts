import { CairnError, type Lease, type StreamChunk } from '@cairn/sdk';
import { expect, it } from 'vitest';
import { describeOnNodeAndCluster, type OpenedStore, type SlotOf } from './node-and-cluster.js';
import { noRedisServer } from './redis-server.js';
import { skippedBecause, sleep } from './support.js';

// A run's stream log on Redis: a Redis Stream in the run's slot, gone whenever the run's keys go (delete, a
// child deleted with its parent, prune, settledTtlMs, a stale child replaced by create), and an entry the store
// did not write refused with a typed error that says where. On a single node and on a one-node Cluster.

const long = 60_000;
const run = (runId: string, parent?: Lease) => ({
  runId,
  kind: 'agent',
  name: 'streams',
  signature: 's',
  snapshot: null,
  ...(parent === undefined
    ? {}
    : { parent: { runId: parent.runId, incarnation: parent.incarnation } }),
});
const chunks = (from: number, count: number): StreamChunk[] =>
  Array.from({ length: count }, (_, i) => ({
    position: from + i,
    unit: 'trip-1',
    part: { type: 'text', text: `t${from + i}` },
    at: from + i,
  }));
const positions = (read: readonly StreamChunk[]) => read.map((chunk) => chunk.position);
/** What a promise was rejected with (undefined when it resolved). */
const rejection = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

function streamTests(open: () => Promise<OpenedStore>, slotOf: SlotOf): void {
  it("keeps a run's stream in its slot, one entry <position>-0 per chunk", async () => {
    const { store, admin, keys } = await open();
    for (const runId of ['', 'a{b}c', '{b1}', 'ünï ✓']) {
      await store.create(run(runId));
      const lease = (await store.acquire(runId, { owner: 'w', ttlMs: long }))!;
      await store.appendStream(lease, chunks(1, 2));
      const own = keys.run(runId);
      expect(await slotOf(own.stream), runId).toBe(await slotOf(own.run));
      expect(await admin.xrange(own.stream, '-', '+')).toEqual([
        ['1-0', ['unit', 'trip-1', 'part', '{"type":"text","text":"t1"}', 'at', '1']],
        ['2-0', ['unit', 'trip-1', 'part', '{"type":"text","text":"t2"}', 'at', '2']],
      ]);
    }
  });

  it('takes the stream with the run: delete (its children too), prune, settledTtlMs', async () => {
    const { store, admin, keys, another } = await open();
    const exists = (runId: string) => admin.exists(keys.run(runId).stream);
    await store.create(run('p'));
    const parent = (await store.acquire('p', { owner: 'w', ttlMs: long }))!;
    await store.create(run('p/c', parent));
    const child = (await store.adopt('p/c', parent))!;
    await store.appendStream(parent, chunks(1, 2));
    await store.appendStream(child, chunks(1, 3));
    expect(await exists('p/c')).toBe(1);
    await store.release(parent);
    expect(await store.delete('p')).toBe(true);
    expect([await exists('p'), await exists('p/c')]).toEqual([0, 0]);

    const settling = await another({ settledTtlMs: long });
    await settling.create(run('done'));
    const lease = (await settling.acquire('done', { owner: 'w', ttlMs: long }))!;
    await settling.appendStream(lease, chunks(1, 1));
    await settling.save(lease, {
      status: 'completed',
      signature: 's',
      snapshot: null,
      journalSeq: 0,
      release: true,
    });
    expect(await admin.pttl(keys.run('done').stream)).toBeGreaterThan(0);
    await sleep(5);
    expect(await settling.prune({ olderThan: Date.now() + long })).toBe(1);
    expect(await exists('done')).toBe(0);
  });

  it('gives a child created again over a stale one (its parent gone, a crash before the cascade) no stream', async () => {
    const { store, admin, keys } = await open();
    await store.create(run('q'));
    const first = (await store.acquire('q', { owner: 'w', ttlMs: long }))!;
    await store.create(run('q/c', first));
    await store.appendStream((await store.adopt('q/c', first))!, chunks(1, 2));
    // The parent's keys gone and its children not yet, as a crash between the two steps of a delete leaves them.
    await admin.del(keys.run('q').run, keys.run('q').lease, keys.run('q').children);
    await store.create(run('q'));
    const second = (await store.acquire('q', { owner: 'w', ttlMs: long }))!;
    expect((await store.create(run('q/c', second))).created).toBe(true);
    expect(await store.readStream('q/c')).toEqual([]);
    expect(await store.streamPosition('q/c')).toBe(0);
  });

  it('refuses an entry the store did not write with STORE_FAILED at its position; reading on from it skips it', async () => {
    const { store, admin, keys } = await open();
    await store.create(run('r'));
    const lease = (await store.acquire('r', { owner: 'w', ttlMs: long }))!;
    await store.appendStream(lease, chunks(1, 3));
    const stream = keys.run('r').stream;
    await admin.xadd(stream, '4-0', 'unit', 'trip-1', 'part', '{"broken', 'at', '4');
    await store.appendStream(lease, chunks(5, 1));
    const failed = (data: object) => ({ code: 'STORE_FAILED', retryable: false, data });
    expect(await rejection(store.readStream('r'))).toBeInstanceOf(CairnError);
    expect(await rejection(store.readStream('r'))).toMatchObject(
      failed({ runId: 'r', position: 4 }),
    );
    expect(positions(await store.readStream('r', { limit: 3 }))).toEqual([1, 2, 3]);
    expect(positions(await store.readStream('r', { after: 4 }))).toEqual([5]);
    expect(await store.streamPosition('r')).toBe(5);
    // A position missing is refused too, never passed over: a reader sees every position or is told.
    await admin.xdel(stream, '2-0');
    expect(await rejection(store.readStream('r'))).toMatchObject(failed({ position: 2 }));
    expect(positions(await store.readStream('r', { after: 2, limit: 1 }))).toEqual([3]);
    // An id the store never writes.
    await admin.xadd(
      stream,
      '5-1',
      'unit',
      'trip-1',
      'part',
      '{"type":"text","text":"x"}',
      'at',
      '5',
    );
    expect(await rejection(store.streamPosition('r'))).toMatchObject(failed({ entryId: '5-1' }));
    expect(await rejection(store.readStream('r', { after: 4 }))).toMatchObject(
      failed({ entryId: '5-1' }),
    );
  });
}

const reason = noRedisServer();

if (reason !== undefined) {
  skippedBecause(reason);
} else {
  describeOnNodeAndCluster('streams', streamTests);
}
