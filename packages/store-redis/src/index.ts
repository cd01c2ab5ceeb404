/** @cairn/store-redis: Cairn's snapshots, journal and fenced leases on Redis. */
export { redisStore } from './redis-store.js';
export type { PruneOptions, RedisStore, RedisStoreOptions } from './redis-store.js';
export type { RedisClient } from './client.js';
