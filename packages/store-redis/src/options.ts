import type { RunStatus } from '@cairn/sdk';
import type { RedisClient } from './client.js';

/** Options of `redisStore`. */
export interface RedisStoreOptions {
  /** An ioredis `Redis` or `Cluster` the caller owns and closes; the store never quits it. */
  client: RedisClient;
  /** Prefix of every key the store writes; must hold no `{` or `}`. @defaultValue 'cairn' */
  prefix?: string;
  /**
   * Once a run reaches a final status (completed, failed, cancelled, dead-lettered) its keys expire after this
   * many milliseconds. @defaultValue undefined (kept until deleted or pruned)
   */
  settledTtlMs?: number;
  /** How long one call waits for the client to be ready and Redis to answer before `STORE_UNAVAILABLE`. @defaultValue 10000 */
  timeoutMs?: number;
  /**
   * How a holder's liveness is known. `session`: the store instance keeps a liveness of its own beside the runs
   * it holds, renewed every 200 ms and good for 500 ms, so a crashed holder's runs are taken over once its liveness
   * has been gone for `takeoverGraceMs`, without waiting for their leases. `lease`: the store keeps none and reads
   * none; a crashed holder's runs are taken over when their leases run out. @defaultValue 'session'
   */
  liveness?: 'session' | 'lease';
  /**
   * How long a claimer waits, once another instance's liveness is gone, before taking its runs; and, after its
   * own calls to Redis failed, before taking any other instance's runs: after an outage every instance renews
   * its liveness first. Every claim path keeps it: a worker's claim (`claimable` then `acquire`) and `acquire`
   * (execute, resume, a client's cancel), so a holder whose connection only blipped keeps its runs.
   * @defaultValue 3000
   */
  takeoverGraceMs?: number;
}

/** What `prune` deletes. */
export interface PruneOptions {
  /** Runs last updated before this instant (a `Date` or milliseconds since the epoch). */
  olderThan: Date | number;
  /** Only runs in these statuses. @defaultValue the final statuses */
  status?: RunStatus | readonly RunStatus[];
}

/** What `migrateKeyLayout` moves besides the runs the old indexes name. */
export interface MigrateKeyLayoutOptions {
  /** Ids of runs to move even if no old index names them. @defaultValue [] */
  runIds?: Iterable<string>;
}
