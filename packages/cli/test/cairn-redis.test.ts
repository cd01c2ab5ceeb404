import { randomUUID } from 'node:crypto';
import { redisStore } from '@cairn/store-redis';
import { Redis } from 'ioredis';
import { describeCairnCommands } from './commands-suite.js';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

describeCairnCommands('Redis', async () => {
  // A prefix of this file's own, so files and runs of the suite never meet.
  const prefix = `cairn-cli-test-${randomUUID()}`;
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  const store = redisStore({ client, prefix });
  return {
    store,
    env: { REDIS_URL: url, CAIRN_PREFIX: prefix },
    another: () => redisStore({ client, prefix }),
    async close() {
      await store.close();
      // KEYS is fine on the tests' one-node Redis, in a clean-up (never in the store).
      const keys = await client.keys(`${prefix}:*`);
      if (keys.length > 0) await client.unlink(...keys);
      client.disconnect();
    },
  };
});
