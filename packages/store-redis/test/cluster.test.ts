import { describeStoreConformance } from '@cairn/testing';
import { redisStore } from '@cairn/store-redis';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { noRedisServer, startOwnRedis, type OwnRedis } from './redis-server.js';
import { connect, deleteKeys, skippedBecause, sleep, uniquePrefix } from './support.js';

// A one-node Redis Cluster owning every slot: Cluster refuses a script whose keys span slots, so the whole
// suite passing here shows each script stays within its run's slot, and exercises the two-step index.
const reason = noRedisServer();

if (reason !== undefined) {
  skippedBecause(reason);
} else {
  let server: OwnRedis;
  const clusters: Cluster[] = [];
  beforeAll(async () => {
    server = await startOwnRedis({
      extra: ['--cluster-enabled', 'yes', '--cluster-announce-ip', '127.0.0.1'],
    });
    const admin = await connect(server.url);
    await admin.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
    while (!String(await admin.call('CLUSTER', 'INFO')).includes('cluster_state:ok'))
      await sleep(50);
    admin.disconnect();
  });
  afterAll(async () => {
    for (const cluster of clusters) cluster.disconnect();
    await server?.stop();
  });

  async function openCluster(): Promise<Cluster> {
    const cluster = new Cluster([{ host: '127.0.0.1', port: server.port }]);
    cluster.on('error', () => undefined);
    clusters.push(cluster);
    if (cluster.status !== 'ready') await new Promise((resolve) => cluster.once('ready', resolve));
    return cluster;
  }

  it('refuses a script that spans slots (so the suite below proves the hash tags)', async () => {
    const cluster = await openCluster();
    await expect(
      cluster.eval("return redis.call('GET', KEYS[2])", 2, '{a}x', '{b}y'),
    ).rejects.toThrow(/CROSSSLOT|same slot/);
  });

  describeStoreConformance('redisStore on a one-node Redis Cluster', async () => {
    const prefix = uniquePrefix('cluster');
    const shortTtlMs = 200;
    return {
      store: async () => redisStore({ client: await openCluster(), prefix }),
      shortTtlMs,
      expireLeases: () => sleep(shortTtlMs + 100),
      close: async () => {
        const admin = await connect(server.url);
        await deleteKeys(admin, prefix);
        admin.disconnect();
      },
    };
  });
}
