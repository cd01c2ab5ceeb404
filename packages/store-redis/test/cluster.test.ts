import { describeStoreConformance } from '@cairn/testing';
import { redisStore, type RedisStore } from '@cairn/store-redis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { noRedisServer, startOwnCluster, type OwnCluster } from './redis-server.js';
import {
  connect,
  deleteKeys,
  lapseLiveness,
  skippedBecause,
  sleep,
  uniquePrefix,
} from './support.js';

// A one-node Redis Cluster owning every slot: Cluster refuses a script whose keys span slots, so the whole
// suite passing here shows each script stays within its run's slot, and exercises the two-step index.
const reason = noRedisServer();

if (reason !== undefined) {
  skippedBecause(reason);
} else {
  let server: OwnCluster;
  beforeAll(async () => {
    server = await startOwnCluster();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('refuses a script that spans slots (so the suite below proves the hash tags)', async () => {
    const cluster = await server.open();
    await expect(
      cluster.eval("return redis.call('GET', KEYS[2])", 2, '{a}x', '{b}y'),
    ).rejects.toThrow(/CROSSSLOT|same slot/);
  });

  describeStoreConformance('redisStore on a one-node Redis Cluster', async () => {
    const prefix = uniquePrefix('cluster');
    const shortTtlMs = 200;
    // The node owns every slot, so a plain client may write any key of it.
    const admin = await connect(server.url);
    return {
      store: async () => redisStore({ client: await server.open(), prefix }),
      shortTtlMs,
      expireLeases: () => sleep(shortTtlMs + 100),
      crash: (store) => (store as RedisStore).close(),
      blip: (store) => lapseLiveness(admin, prefix, (store as RedisStore).instance),
      close: async () => {
        await deleteKeys(admin, prefix);
        admin.disconnect();
      },
    };
  });
}
