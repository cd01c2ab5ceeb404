import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
// The tests reach into the key layout: where a run's index entries are is what they check.
import { bucketOf, type KeySpace } from '../src/keys.js';
import { indexMismatches, livenessMismatches, placement } from './index-placement.js';
import { describeOnNodeAndCluster, type OpenedStore, type SlotOf } from './node-and-cluster.js';
import { noRedisServer } from './redis-server.js';
import { skippedBecause, sleep } from './support.js';

// Issue 20, points 2 and 3: a run's index entries are written by the script that writes the run, so after every
// write path, retried or not, a run is in exactly its status's index of its own bucket, and in its bucket's
// claimable set exactly while a worker could claim it, scored by when. Checked on a single node and on a
// one-node Cluster (which refuses a script whose keys span slots).

const long = 60_000;
const run = (runId: string, status: 'queued' | 'running' = 'queued') => ({
  runId,
  kind: 'agent',
  name: 'indexes',
  signature: 's',
  snapshot: null,
  status,
});
const definitions = [{ kind: 'agent', name: 'indexes' }];

/**
 * Every run under the prefix is exactly where its hash says in its bucket's indexes and under its holder's
 * liveness, and nothing else is.
 */
async function expectIndexed(admin: Redis, keys: KeySpace): Promise<void> {
  expect(await indexMismatches(admin, keys)).toEqual([]);
  expect(await livenessMismatches(admin, keys)).toEqual([]);
}

/** Registers the tests on the stores `open` gives. */
function indexTests(open: () => Promise<OpenedStore>, slotOf: SlotOf) {
  it('keeps a run in exactly its status index and its claimable entry exact after every write path', async () => {
    const { store, admin, keys } = await open();
    await store.create(run('root'));
    await expectIndexed(admin, keys);
    expect((await placement(admin, keys, 'root')).claimable).toHaveLength(1);
    const lease = (await store.acquire('root', { owner: 'w', ttlMs: long }))!;
    await store.create({ ...run('root/child', 'running'), parent: lease });
    await expectIndexed(admin, keys);
    expect((await placement(admin, keys, 'root/child')).claimable).toEqual([]);
    const renewed = await store.renew(lease, long * 2);
    await expectIndexed(admin, keys);
    const child = (await store.adopt('root/child', renewed))!;
    await store.save(renewed, { status: 'suspended', signature: 's', snapshot: 1, journalSeq: 0 });
    await store.updateStatus(child, { status: 'completed' });
    await expectIndexed(admin, keys);
    expect(await store.claimable({ limit: 10, definitions })).toEqual([]);
    await store.release(renewed);
    await expectIndexed(admin, keys);
    expect(await store.claimable({ limit: 10, definitions })).toEqual(['root']);
    await store.requestCancel('root');
    await expectIndexed(admin, keys);

    // Held (scored by its lease's end, checked above while held for long): not claimable until the lease ends.
    const again = (await store.acquire('root', { owner: 'w', ttlMs: 150 }))!;
    await expectIndexed(admin, keys);
    await sleep(250);
    // The lease ran out: the entry's score (the lease's end) made it due, with no write since.
    expect(await store.claimable({ limit: 10, definitions })).toEqual(['root']);
    const third = (await store.acquire('root', { owner: 'v', ttlMs: long }))!;
    expect(third.epoch).toBe(again.epoch + 1);
    await store.updateStatus(third, { status: 'failed' });
    await store.updateStatus(third, { status: 'failed' });
    await expectIndexed(admin, keys);
    expect((await placement(admin, keys, 'root')).claimable).toEqual([]);
    await store.release(third);
    expect(await store.prune({ olderThan: Date.now() + long })).toBe(1);
    await expectIndexed(admin, keys);
    expect(await placement(admin, keys, 'root/child')).toEqual({ statuses: [], claimable: [] });

    await store.create(run('gone', 'running'));
    expect(await store.delete('gone')).toBe(true);
    expect(await placement(admin, keys, 'gone')).toEqual({ statuses: [], claimable: [] });
  });

  it('leaves the indexes exact when a save is retried after its first try landed and its reply was lost', async () => {
    const { store, admin, keys } = await open();
    await store.create(run('retried', 'running'));
    const lease = (await store.acquire('retried', { owner: 'w', ttlMs: long }))!;
    // What the first try of `save` did to the run before its reply was lost: with a second index step, the run's
    // status was written but its index entry stayed under `running`, and the retry found nothing to move.
    await admin.hset(keys.run('retried').run, 'status', 'suspended');
    await store.save(lease, { status: 'suspended', signature: 's', snapshot: 1, journalSeq: 0 });
    expect((await placement(admin, keys, 'retried')).statuses).toEqual([
      `${bucketOf('retried')}:suspended`,
    ]);
    // The same for a final status, which no later write can repair: the retry itself must.
    await admin.hset(keys.run('retried').run, 'status', 'completed');
    await store.save(lease, { status: 'completed', signature: 's', snapshot: 2, journalSeq: 0 });
    await expectIndexed(admin, keys);
    expect((await store.list({ status: 'suspended' })).map((r) => r.runId)).toEqual([]);
    expect((await store.list({ status: 'completed' })).map((r) => r.runId)).toEqual(['retried']);
  });

  it('maps any run id to keys of one slot, its bucket indexes in it too, and lists them oldest first', async () => {
    const { store, admin, keys } = await open();
    const ids = [
      '',
      '{',
      '}{x}',
      '%7B',
      'a{b}c',
      'ünïcødé ✓ 日本',
      'x'.repeat(300),
      '{b1}',
      'run:x',
    ];
    for (const runId of ids) await store.create(run(runId));
    for (const runId of ids) {
      const own = keys.run(runId);
      const bucket = bucketOf(runId);
      const slots = new Set<unknown>();
      for (const key of [
        own.run,
        own.journal,
        own.lease,
        own.children,
        ...keys.bucketIndexes(bucket),
      ])
        slots.add(await slotOf(key));
      expect(slots.size, runId).toBe(1);
      expect((await store.load(runId))?.run.runId).toBe(runId);
    }
    expect(new Set(ids.map((runId) => keys.run(runId).run)).size).toBe(ids.length);
    expect((await store.list()).map((r) => r.runId)).toEqual(ids);
    expect(await store.claimable({ limit: ids.length, definitions })).toEqual(ids);
    await expectIndexed(admin, keys);
  });
}

const reason = noRedisServer();

if (reason !== undefined) {
  skippedBecause(reason);
} else {
  describeOnNodeAndCluster('indexes', indexTests);
}
