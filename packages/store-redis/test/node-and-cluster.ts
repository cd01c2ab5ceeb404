import { redisStore, type RedisStore, type RedisStoreOptions } from '@cairn/store-redis';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe } from 'vitest';
// What these tests check is where keys are: they get the key layout with the store.
import { keySpace, type KeySpace } from '../src/keys.js';
import { startOwnCluster, type OwnCluster } from './redis-server.js';
import { connect, createRedisHarness, uniquePrefix, type RedisHarness } from './support.js';

/** Options of a store the tests open: all but the client and the prefix, which `open` picks. */
export type StoreOptions = Omit<Partial<RedisStoreOptions>, 'client' | 'prefix'>;

/** A store under a prefix of its own, a plain client that may read any of its keys, and its key layout. */
export interface OpenedStore {
  store: RedisStore;
  admin: Redis;
  keys: KeySpace;
  /** Whether the store runs on the one-node Cluster. */
  cluster: boolean;
  /** Another store instance on a client of its own under the same prefix, as another worker would be. */
  another(options?: StoreOptions): Promise<RedisStore>;
}

/** Asks a Cluster node (`CLUSTER KEYSLOT`) for a key's slot, as a single node cannot. */
export type SlotOf = (key: string) => Promise<unknown>;

/**
 * Registers `tests` twice: on the shared single node, and on a one-node Cluster of the file's own (which refuses
 * a script whose keys span slots). Each call of `open` gives a store under a fresh prefix; everything is
 * cleaned up after the file.
 */
export function describeOnNodeAndCluster(
  label: string,
  tests: (open: (options?: StoreOptions) => Promise<OpenedStore>, slotOf: SlotOf) => void,
): void {
  let cluster: OwnCluster;
  let clusterAdmin: Redis;
  const opened: Redis[] = [];
  const harnesses: RedisHarness[] = [];
  beforeAll(async () => {
    cluster = await startOwnCluster();
    clusterAdmin = await connect(cluster.url);
  });
  afterAll(async () => {
    for (const harness of harnesses) await harness.close();
    for (const client of opened) client.disconnect();
    clusterAdmin?.disconnect();
    await cluster?.stop();
  });
  const slotOf: SlotOf = (key) => clusterAdmin.call('CLUSTER', 'KEYSLOT', key);

  describe('on a single node', () => {
    tests(async (options = {}) => {
      const harness = await createRedisHarness(label);
      harnesses.push(harness);
      const admin = await connect();
      opened.push(admin);
      return {
        store: await harness.store(options),
        admin,
        keys: keySpace(harness.prefix),
        cluster: false,
        another: (more = {}) => harness.store(more),
      };
    }, slotOf);
  });

  describe('on a one-node Cluster', () => {
    tests(async (options = {}) => {
      const prefix = uniquePrefix(label);
      const open = async (more: StoreOptions) =>
        redisStore({ ...more, client: await cluster.open(), prefix });
      // The node owns every slot, so a plain client may read any key of it.
      return {
        store: await open(options),
        admin: clusterAdmin,
        keys: keySpace(prefix),
        cluster: true,
        another: (more = {}) => open(more),
      };
    }, slotOf);
  });
}
