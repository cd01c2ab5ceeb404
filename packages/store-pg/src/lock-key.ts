import { createHash } from 'node:crypto';

/**
 * The advisory lock key of a run: the first 8 bytes of SHA-256 of its id as a signed bigint, and the two
 * unsigned halves under which `pg_locks` shows it (`classid` high, `objid` low, `objsubid` 1).
 * A collision only costs contention: the lease row carries the full run id.
 */
export interface LockKey {
  /** The bigint as decimal text, passed as `$n::bigint`. */
  key: string;
  classid: number;
  objid: number;
}

/** Derives a run's advisory lock key. Every lock statement takes its key from here. */
export function lockKey(runId: string): LockKey {
  const digest = createHash('sha256').update(runId, 'utf8').digest();
  return {
    key: digest.readBigInt64BE(0).toString(),
    classid: digest.readUInt32BE(0),
    objid: digest.readUInt32BE(4),
  };
}
