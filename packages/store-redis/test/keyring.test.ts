import { redisKeyring, type RedisClient } from '@cairn/store-redis';
import { describeKeyringConformance } from '@cairn/testing';
import { afterAll, beforeAll, describe } from 'vitest';
import { noRedisServer, startOwnCluster, type OwnCluster } from './redis-server.js';
import { connect, skippedBecause, uniquePrefix, unreachable } from './support.js';

/** Keyrings under one prefix, each on a client of its own as separate processes would be. */
function keyringHarness(open: () => Promise<RedisClient>) {
  return async () => {
    const prefix = uniquePrefix('keyring');
    const clients: RedisClient[] = [];
    return {
      async keyring() {
        const client = await open();
        clients.push(client);
        return redisKeyring({ client, prefix });
      },
      async close() {
        const tag = `{${prefix}:keyring}`;
        for (const key of ['ids', 'keys', 'forgotten']) await clients[0]?.del(`${tag}:${key}`);
        for (const client of clients) client.disconnect();
      },
    };
  };
}

const reason = await unreachable();
if (reason === undefined) {
  describeKeyringConformance(
    'redisKeyring on a single node',
    keyringHarness(() => connect()),
  );
} else {
  skippedBecause(reason);
}

// Cluster refuses a script whose keys span slots: the keyring's keys share one hash tag.
const noServer = noRedisServer();
if (noServer === undefined) {
  describe('on a one-node Redis Cluster', () => {
    let server: OwnCluster;
    beforeAll(async () => {
      server = await startOwnCluster();
    });
    afterAll(async () => {
      await server?.stop();
    });
    describeKeyringConformance(
      'redisKeyring on a one-node Cluster',
      keyringHarness(() => server.open()),
    );
  });
} else {
  skippedBecause(noServer);
}
