/** @cairn/store-redis: Cairn's snapshots, journal and fenced leases on Redis. */
export { redisStore } from './redis-store.js';
export type {
  MigrateKeyLayoutOptions,
  PruneOptions,
  RedisStore,
  RedisStoreOptions,
} from './redis-store.js';
export type { RedisClient } from './client.js';
