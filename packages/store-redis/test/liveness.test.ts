import { LeaseLostError, type JournalEntry, type Lease } from '@cairn/sdk';
import { redisStore, type RedisStore } from '@cairn/store-redis';
import type { TcpProxy } from '@cairn/testing';
import type { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
// The test reads where the store keeps liveness: the bucket of each run it holds.
import { bucketOf, keySpace } from '../src/keys.js';
import { describeOnNodeAndCluster } from './node-and-cluster.js';
import { noRedisServer } from './redis-server.js';
import {
  connectThroughProxy,
  createRedisHarness,
  lapseLiveness,
  skippedBecause,
  sleep,
  until,
  type RedisHarness,
} from './support.js';

// Issue 32, item 4: a store instance keeps a liveness record in each bucket it holds runs in; a claimer takes the
// runs of a holder whose liveness has been gone for the takeover grace, without waiting for their leases.

const long = 60_000;
const definitions = [{ kind: 'agent', name: 'liveness' }];
const run = (runId: string) => ({
  runId,
  kind: 'agent',
  name: 'liveness',
  signature: 's',
  snapshot: { step: 0 },
  status: 'queued' as const,
});
const marks = (...seqs: number[]): JournalEntry[] =>
  seqs.map((seq) => ({ seq, type: 'started', effectId: `e${seq}`, at: seq }));
const poll = { timeout: 15_000, interval: 50 };

/** Creates `ids` and claims each through `store` as `owner`, with a lease far longer than the test. */
async function claimAll(store: RedisStore, owner: string, ids: readonly string[]) {
  const leases: Lease[] = [];
  for (const id of ids) {
    await store.create(run(id));
    leases.push((await store.acquire(id, { owner, ttlMs: long }))!);
  }
  return leases;
}

const reason = noRedisServer();

if (reason !== undefined) {
  skippedBecause(reason);
} else {
  describe('on a single node, through a proxy that can cut one instance off', () => {
    let harness: RedisHarness;
    let proxy: TcpProxy;
    let client: Redis;
    beforeEach(async () => {
      harness = await createRedisHarness('liveness');
      ({ proxy, client } = await connectThroughProxy());
    });
    afterEach(async () => {
      client.disconnect();
      await proxy.close();
      await harness.close();
    });
    const cutOff = (options: { takeoverGraceMs?: number } = {}) =>
      redisStore({ client, prefix: harness.prefix, timeoutMs: 1_000, ...options });

    /** Whether the liveness recorded for the holder of `runId` is still alive on the server's clock. */
    async function holderLiveness(runId: string): Promise<'alive' | 'lapsed' | 'none'> {
      const keys = keySpace(harness.prefix);
      const holder = await harness.admin.hget(keys.run(runId).run, 'holder');
      if (holder === null) return 'none';
      const until = await harness.admin.zscore(keys.live(bucketOf(runId)), holder);
      if (until === null) return 'none';
      const [seconds, micros] = await harness.admin.time();
      const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      return Number(until) > now ? 'alive' : 'lapsed';
    }

    it('takes the runs of a holder that stopped renewing once the grace passed: a recovery taken from it, and every later write of it refused', async () => {
      const holder = cutOff();
      const claimer = await harness.store({ takeoverGraceMs: 300 });
      const [l1, l2] = await claimAll(holder, 'a', ['r1', 'r2']);
      // Its process freezes or its network goes: nothing it sends reaches Redis, its leases have a minute left.
      await proxy.cut();
      await until(client, 'reconnecting');
      // A worker's claim: what `claimable` lists, it acquires.
      await expect
        .poll(() => claimer.claimable({ limit: 10, definitions }), poll)
        .toEqual(['r1', 'r2']);
      const t1 = await claimer.acquire('r1', { owner: 'b', ttlMs: long });
      const t2 = await claimer.acquire('r2', { owner: 'b', ttlMs: long });
      expect(t1).toMatchObject({ epoch: l1!.epoch + 1, recoveries: 1, takenFrom: 'a' });
      expect(t2).toMatchObject({ epoch: l2!.epoch + 1, recoveries: 1, takenFrom: 'a' });

      // It comes back: its liveness renews, but the runs are fenced against everything it still writes.
      await proxy.restore();
      await until(client, 'ready');
      await expect(holder.append(l1!, marks(1))).rejects.toBeInstanceOf(LeaseLostError);
      await expect(
        holder.save(l1!, { status: 'completed', signature: 's', snapshot: {}, journalSeq: 0 }),
      ).rejects.toBeInstanceOf(LeaseLostError);
      await expect(holder.updateStatus(l2!, { status: 'suspended' })).rejects.toBeInstanceOf(
        LeaseLostError,
      );
      await expect(holder.renew(l1!, long)).rejects.toBeInstanceOf(LeaseLostError);
      await expect(holder.renew(l2!, long)).rejects.toBeInstanceOf(LeaseLostError);
      await claimer.append(t1!, marks(1));
      expect((await claimer.load('r1'))!.run).toMatchObject({
        owner: 'b',
        epoch: l1!.epoch + 1,
        recoveries: 1,
      });
      expect((await claimer.load('r1'))!.journal.map((entry) => entry.seq)).toEqual([1]);
    });

    it('keeps every run of a holder whose liveness lapsed for less than the grace: no takeover, the same epoch, no recovery', async () => {
      const holder = cutOff();
      const claimer = await harness.store({ takeoverGraceMs: 2_000 });
      const leases = await claimAll(holder, 'a', ['r1', 'r2']);
      await proxy.cut();
      await until(client, 'reconnecting');
      // Its liveness runs out now, as it would a moment into a blip.
      await lapseLiveness(harness.admin, harness.prefix, holder.instance);
      // A claimer looks while it is gone, on both claim paths, and leaves the runs.
      expect(await holderLiveness('r1')).toBe('lapsed');
      expect(await claimer.claimable({ limit: 10, definitions })).toEqual([]);
      expect(await claimer.acquire('r1', { owner: 'b', ttlMs: long })).toBeUndefined();
      expect(await holderLiveness('r2')).toBe('lapsed');

      // The blip ends within the grace: the holder renews its liveness.
      await proxy.restore();
      await until(client, 'ready');
      await expect.poll(() => holderLiveness('r1'), poll).toBe('alive');
      expect(await holderLiveness('r2')).toBe('alive');
      // Past the grace counted from the lapse, claims still find the holder alive.
      await sleep(2_200);
      expect(await claimer.claimable({ limit: 10, definitions })).toEqual([]);
      expect(await claimer.acquire('r1', { owner: 'b', ttlMs: long })).toBeUndefined();
      expect(await claimer.acquire('r2', { owner: 'b', ttlMs: long })).toBeUndefined();
      for (const lease of leases) {
        const renewed = await holder.renew(lease, long);
        await holder.append(renewed, marks(1));
        expect((await claimer.load(lease.runId))!.run).toMatchObject({
          owner: 'a',
          epoch: lease.epoch,
          recoveries: 0,
        });
      }
    });

    it("leaves other instances' runs alone for the grace after its own calls failed: after an outage every holder renews first", async () => {
      const holder = await harness.store();
      const claimer = cutOff({ takeoverGraceMs: 1_000 });
      const [lease] = await claimAll(holder, 'a', ['r1']);
      // The holder is gone, and has been for longer than the grace.
      await holder.close();
      await lapseLiveness(harness.admin, harness.prefix, holder.instance, 10_000);
      await proxy.cut();
      await until(client, 'reconnecting');
      await expect(claimer.claimable({ limit: 10, definitions })).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
      });
      await proxy.restore();
      await until(client, 'ready');
      // Back a moment ago: the claimer does not know yet whether the others are gone or were cut off as it was.
      expect(await claimer.claimable({ limit: 10, definitions })).toEqual([]);
      expect(await claimer.acquire('r1', { owner: 'b', ttlMs: long })).toBeUndefined();
      await expect.poll(() => claimer.claimable({ limit: 10, definitions }), poll).toEqual(['r1']);
      expect(await claimer.acquire('r1', { owner: 'b', ttlMs: long })).toMatchObject({
        epoch: lease!.epoch + 1,
        recoveries: 1,
        takenFrom: 'a',
      });
    });
    it("leaves other instances' runs alone for the grace after a call of its own took longer than a liveness lasts: a Cluster failover holds calls up instead of failing them", async () => {
      const holder = await harness.store();
      const claimer = cutOff({ takeoverGraceMs: 1_000 });
      const [lease] = await claimAll(holder, 'a', ['r1']);
      await holder.close();
      await lapseLiveness(harness.admin, harness.prefix, holder.instance, 10_000);
      // The claimer's requests are held on their way, as ioredis holds them while a replica is promoted: no
      // call fails, but every holder's renewals were held up as well.
      proxy.hold('toServer');
      const held = claimer.claimable({ limit: 10, definitions });
      await sleep(800);
      proxy.release();
      await held;
      expect(await claimer.acquire('r1', { owner: 'b', ttlMs: long })).toBeUndefined();
      await expect.poll(() => claimer.claimable({ limit: 10, definitions }), poll).toEqual(['r1']);
      await expect
        .poll(() => claimer.acquire('r1', { owner: 'b', ttlMs: long }), poll)
        .toMatchObject({ epoch: lease!.epoch + 1, recoveries: 1, takenFrom: 'a' });
    });
  });

  describe("with liveness: 'lease'", () => {
    let harness: RedisHarness;
    beforeEach(async () => {
      harness = await createRedisHarness('liveness-lease');
    });
    afterEach(async () => {
      await harness.close();
    });

    it("keeps today's behaviour: a stopped holder's runs wait out their lease, and its claims read no liveness", async () => {
      const leaseOnly = await harness.store({ liveness: 'lease' });
      const withLiveness = await harness.store();
      const claimer = await harness.store({ takeoverGraceMs: 0 });
      const leaseOnlyClaimer = await harness.store({ liveness: 'lease', takeoverGraceMs: 0 });
      const [held] = await claimAll(leaseOnly, 'lease-holder', ['r1']);
      await claimAll(withLiveness, 'live-holder', ['r2']);
      // Both stop as a crashed process would.
      await leaseOnly.close();
      await withLiveness.close();

      // With no grace, the holder that kept a liveness loses its run at once, but not to a lease-only claimer.
      expect(await leaseOnlyClaimer.acquire('r2', { owner: 'c', ttlMs: long })).toBeUndefined();
      expect(await claimer.acquire('r2', { owner: 'b', ttlMs: long })).toMatchObject({
        recoveries: 1,
        takenFrom: 'live-holder',
      });
      // The lease-only holder recorded none: its run waits for its lease, past the life of any liveness.
      const keys = keySpace(harness.prefix);
      expect(await harness.admin.hget(keys.run('r1').run, 'holder')).toBeNull();
      expect(await harness.admin.zcard(keys.live(bucketOf('r1')))).toBe(0);
      await sleep(1_500);
      expect(await claimer.claimable({ limit: 10, definitions })).toEqual([]);
      expect(await claimer.acquire('r1', { owner: 'b', ttlMs: long })).toBeUndefined();
      expect((await claimer.load('r1'))!.run).toMatchObject({
        owner: 'lease-holder',
        epoch: held!.epoch,
        recoveries: 0,
      });

      // Its lease running out is what frees it, as before.
      await leaseOnly.create(run('r3'));
      const short = (await leaseOnly.acquire('r3', { owner: 'lease-holder', ttlMs: 200 }))!;
      await sleep(300);
      expect(await leaseOnlyClaimer.acquire('r3', { owner: 'c', ttlMs: long })).toMatchObject({
        epoch: short.epoch + 1,
        recoveries: 1,
        takenFrom: 'lease-holder',
      });
    });
  });

  describeOnNodeAndCluster('liveness', (open) => {
    it("keeps a holder's liveness beside the runs it holds, and takes them over in one slot each once it closed and the grace passed", async () => {
      const { store: holder, another, admin, keys } = await open();
      const claimer = await another({ takeoverGraceMs: 300 });
      const ids = Array.from({ length: 6 }, (_, i) => `run-${i}`);
      const leases = await claimAll(holder, 'a', ids);
      for (const id of ids) {
        expect(await admin.hget(keys.run(id).run, 'holder')).toBe(holder.instance);
        expect(await admin.zscore(keys.live(bucketOf(id)), holder.instance)).not.toBeNull();
      }
      // Its liveness ends with it; the leases have a minute left.
      await holder.close();
      await expect.poll(() => claimer.claimable({ limit: 10, definitions }), poll).toEqual(ids);
      for (const [i, id] of ids.entries()) {
        expect(await claimer.acquire(id, { owner: 'b', ttlMs: long })).toMatchObject({
          epoch: leases[i]!.epoch + 1,
          recoveries: 1,
          takenFrom: 'a',
        });
        await expect(holder.append(leases[i]!, marks(1))).rejects.toBeInstanceOf(LeaseLostError);
      }
      // Nothing is left of the old holder's liveness once it holds nothing.
      for (const id of ids) {
        expect(await admin.zscore(keys.live(bucketOf(id)), holder.instance)).toBeNull();
        expect(await admin.hget(keys.run(id).run, 'holder')).toBe(claimer.instance);
      }
      await claimer.close();
    });

    it("fences a child's writes once its root's holder has been gone for the grace, as the root's takeover would: on Cluster by the deadline, before anyone took the root", async () => {
      const { store: holder, another, cluster } = await open({ takeoverGraceMs: 300 });
      const [root] = await claimAll(holder, 'a', ['root']);
      const child = (runId: string) => ({
        ...run(runId),
        status: 'running' as const,
        parent: { runId: 'root', incarnation: root!.incarnation },
      });
      await holder.create(child('child-1'));
      await holder.create(child('child-2'));
      const adopted = (await holder.adopt('child-1', root!))!;
      await holder.append(adopted, marks(1));
      // Its liveness ends here; its lease has a minute left.
      await holder.close();
      await sleep(500);
      if (cluster) {
        // The child's script cannot see the root, which another instance may have taken by now.
        await expect(holder.append(adopted, marks(2))).rejects.toBeInstanceOf(LeaseLostError);
        expect(await holder.adopt('child-2', root!)).toBeUndefined();
      } else {
        // The child's script reads the root itself: nobody took it, so the write lands.
        await holder.append(adopted, marks(2));
      }
      const claimer = await another({ takeoverGraceMs: 300 });
      const taken = (await claimer.acquire('root', { owner: 'b', ttlMs: long }))!;
      expect(taken).toMatchObject({ recoveries: 1, takenFrom: 'a' });
      await expect(holder.append(adopted, marks(3))).rejects.toBeInstanceOf(LeaseLostError);
      const readopted = (await claimer.adopt('child-1', taken))!;
      await claimer.append(readopted, marks(3));
      await claimer.close();
    });

    it("tells a subscriber when a gone holder's grace ends, so a worker that found it gone claims then, not at its next poll", async () => {
      const { store: holder, another } = await open();
      const claimer = await another({ takeoverGraceMs: 1_000 });
      await claimAll(holder, 'a', ['r1']);
      let told = 0;
      const unsubscribe = await claimer.subscribe!(() => (told += 1));
      await holder.close();
      // A poll within the grace finds the holder gone and nothing to claim yet.
      expect(await claimer.claimable({ limit: 10, definitions })).toEqual([]);
      expect(told).toBe(0);
      await expect.poll(() => told, poll).toBeGreaterThan(0);
      expect(await claimer.claimable({ limit: 10, definitions })).toEqual(['r1']);
      await unsubscribe();
      await claimer.close();
    });
  });
}
