import { redisStore } from '@cairn/store-redis';
// The test reaches into the key layout for the number of buckets, which sets a poll's cost.
import { bucketCount } from '../src/keys.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { noRedisServer, startOwnRedis, type OwnRedis } from './redis-server.js';
import { connect, skippedBecause } from './support.js';

// Issue 20, point 6: a claim poll must cost what is claimable, not what is in flight or waiting. 10,000 runs held
// by live leases, 1,000 waiting runs not due (half for a time to come, half for a signal that has not come) and 3
// queued ones; one poll's commands (those the client sends and those its scripts call) are counted
// with `INFO commandstats` on a server of this file's own (CONFIG RESETSTAT would disturb other files on a
// shared one). Before the buckets, a poll sent 10,057: an HGETALL of every run in flight, and the index pages.
const reason = noRedisServer();
const inFlight = 10_000;
const waiting = 1_000;

/** Total calls per command since the last CONFIG RESETSTAT, from `INFO commandstats`. */
function commandCalls(info: string): Map<string, number> {
  const calls = new Map<string, number>();
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    calls.set(match[1]!, Number(match[2]));
  return calls;
}

if (reason !== undefined) {
  skippedBecause(reason);
} else {
  let server: OwnRedis;
  beforeAll(async () => {
    server = await startOwnRedis({ appendfsync: 'everysec', extra: ['--appendonly', 'no'] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it(
    `reads none of ${inFlight} held runs and ${waiting} waiting runs in a claim poll`,
    { timeout: 180_000 },
    async () => {
      const client = await connect(server.url);
      const admin = await connect(server.url);
      // The runs are held by an instance that renews no liveness, so the count is the poll's alone: a live
      // holder's renewals (a script per bucket it holds runs in, 5 times a second) would land in it. A poll
      // reads the same either way, since a liveness that has not ended is outside the range it reads.
      const holder = redisStore({ client, prefix: 'cost', liveness: 'lease' });
      const store = redisStore({ client, prefix: 'cost' });
      const definitions = [{ kind: 'agent', name: 'cost' }];
      const init = (runId: string) => ({
        runId,
        kind: 'agent',
        name: 'cost',
        signature: 's',
        snapshot: null,
        status: 'queued' as const,
      });
      for (let start = 0; start < inFlight; start += 500) {
        await Promise.all(
          Array.from({ length: 500 }, async (_, i) => {
            const runId = `held-${start + i}`;
            await holder.create(init(runId));
            await holder.acquire(runId, { owner: 'w', ttlMs: 600_000 });
          }),
        );
      }
      // The store's clock is the default `now`: waits an hour past it, and waits for a signal only.
      const later = Date.now() + 3_600_000;
      for (let start = 0; start < waiting; start += 500) {
        await Promise.all(
          Array.from({ length: 500 }, async (_, i) => {
            const n = start + i;
            await store.create({
              ...init(`waiting-${n}`),
              status: 'waiting',
              wait:
                n % 2 === 0 ? { until: later + n, signals: [] } : { until: null, signals: ['go'] },
            });
          }),
        );
      }
      // Signals of another name leave a run waiting for `go` asleep.
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          store.signal(`waiting-${2 * i + 1}`, { name: 'other', payload: i }),
        ),
      );
      for (const runId of ['q-1', 'q-2', 'q-3']) await store.create(init(runId));

      // A first poll loads the script on the server (EVALSHA, NOSCRIPT, EVAL): the figure is a steady poll's.
      await store.claimable({ limit: 10, definitions });
      await admin.config('RESETSTAT');
      const found = await store.claimable({ limit: 10, definitions });
      const calls = commandCalls(await admin.info('commandstats'));
      for (const name of calls.keys()) if (/^(config|info)/.test(name)) calls.delete(name);
      const total = [...calls.values()].reduce((sum, n) => sum + n, 0);
      console.info(
        `claim poll with ${inFlight} held runs and ${waiting} waiting: ${total} commands`,
        Object.fromEntries(calls),
      );

      expect(found).toEqual(['q-1', 'q-2', 'q-3']);
      // Each of the 3 claimable runs is read (HMGET, EXISTS of its lease key); no held run is.
      expect(calls.get('hgetall') ?? 0).toBe(0);
      expect(calls.get('hmget') ?? 0).toBe(3);
      expect(calls.get('exists') ?? 0).toBe(3);
      // One script per bucket, and in each its clock, one range of due entries in each of its two sets and one
      // of the liveness that ended (none here).
      expect(calls.get('evalsha')).toBe(bucketCount);
      expect(calls.get('zrangebyscore')).toBe(3 * bucketCount);
      expect(total).toBe(5 * bucketCount + 6);
      // Past their time, the timed waits are due (the claimer's clock decides), the others still are not.
      const due = await store.claimable({ limit: 2 * waiting, definitions, now: later + waiting });
      expect(due.filter((id) => id.startsWith('waiting-'))).toHaveLength(waiting / 2);
      expect(due.every((id) => !id.startsWith('waiting-') || Number(id.slice(8)) % 2 === 0)).toBe(
        true,
      );
      client.disconnect();
      admin.disconnect();
    },
  );
}
