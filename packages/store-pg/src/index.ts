/** @cairn/store-pg: Cairn's snapshots, journal, stream logs and fenced leases on Postgres. */
export { migrationSql, pgStore } from './pg-store.js';
export type { PgStore, PgStoreOptions, PruneOptions } from './pg-store.js';
export { pgKeyring } from './keyring.js';
export type { PgKeyring, PgKeyringOptions } from './keyring.js';
