import { redisKeyring, type RedisClient } from '@cairn/store-redis';
import { describeKeyringConformance } from '@cairn/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

  it('says a key its hashes lost or garbled was changed outside the keyring, with a typed error', async () => {
    const prefix = uniquePrefix('keyring');
    const client = await connect();
    try {
      const keyring = redisKeyring({ client, prefix });
      await keyring.current('user-1');
      const { id } = await keyring.current('user-2');
      await client.hset(`{${prefix}:keyring}:keys`, id, 'not a key');
      await expect(keyring.key(id)).rejects.toMatchObject({ code: 'STORE_FAILED' });
      await client.del(`{${prefix}:keyring}:keys`);
      await expect(keyring.current('user-1')).rejects.toMatchObject({
        code: 'STORE_FAILED',
        message: expect.stringContaining('changed outside the keyring'),
      });
    } finally {
      await client.del(`{${prefix}:keyring}:ids`);
      client.disconnect();
    }
  });
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
