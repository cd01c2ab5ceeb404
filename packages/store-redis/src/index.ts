/** @cairn/store-redis: Cairn's snapshots, journal and fenced leases on Redis. */
export { redisStore } from './redis-store.js';
export type { RedisStore } from './redis-store.js';
export type { MigrateKeyLayoutOptions, PruneOptions, RedisStoreOptions } from './options.js';
export type { RedisClient } from './client.js';
export { redisKeyring } from './keyring.js';
export type { RedisKeyringOptions } from './keyring.js';
