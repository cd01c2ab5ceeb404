import {
  CairnError,
  LeaseLostError,
  RunNotFoundError,
  type AcquireOptions,
  type Lease,
} from '@cairn/sdk';
import type { Db } from './db.js';
import { toStoreError } from './errors.js';
import type { LockConnection } from './lock-connection.js';
import { lockKey, type LockKey } from './lock-key.js';
import type { Names } from './names.js';
import { advisoryUnlock, tryAdvisoryLock } from './sql/advisory-lock.js';
import { breakFrozenHolder } from './sql/break-frozen-holder.js';
import { claimRun, runExists } from './sql/claim-run.js';
import { releaseLease } from './sql/release-lease.js';
import { renewLease } from './sql/renew-lease.js';

/** A claim this store instance holds: the advisory lock lives on the lock connection's `generation`. */
interface Held {
  owner: string;
  epoch: number;
  key: LockKey;
  generation: number;
}

/** What the lease logic needs from its store. */
export interface LeaseContext {
  sql: Db;
  names: Names;
  lock: LockConnection;
  /** How long a claimer waits for a frozen holder's backend to exit after terminating it. */
  terminateWaitMs: number;
}

const pending = Symbol('pending');

/**
 * Claims, renewals and releases (DESIGN.md, "Claiming a run"): the advisory lock is the fast hint, the lease
 * row with its epoch is the fence. An in-process map refuses a second local claim of a run and ties every
 * claim to the lock connection session it was made on; when that session goes, the claim is fenced.
 */
export class Leases {
  private readonly held = new Map<string, Held | typeof pending>();

  constructor(private readonly ctx: LeaseContext) {}

  /** True when this instance claimed the run at `epoch` and its lock connection has since been lost. */
  isFenced(runId: string, epoch: number): boolean {
    const held = this.held.get(runId);
    return (
      held !== undefined &&
      held !== pending &&
      held.epoch === epoch &&
      !this.ctx.lock.isLive(held.generation)
    );
  }

  async acquire(
    runId: string,
    { owner, ttlMs, reclaimOwn }: AcquireOptions,
  ): Promise<Lease | undefined> {
    if (!(ttlMs > 0))
      throw new CairnError('INVALID_ARGUMENT', `ttlMs must be positive, got ${ttlMs}.`);
    const local = this.held.get(runId);
    if (local === pending) return undefined;
    if (local !== undefined && this.ctx.lock.isLive(local.generation)) return undefined;
    this.held.set(runId, pending);
    try {
      const lease = await this.claim(runId, owner, ttlMs, reclaimOwn === true);
      return lease;
    } finally {
      if (this.held.get(runId) === pending) this.held.delete(runId);
    }
  }

  async renew(lease: Lease, ttlMs: number): Promise<Lease> {
    const held = this.held.get(lease.runId);
    if (
      held === undefined ||
      held === pending ||
      held.epoch !== lease.epoch ||
      held.owner !== lease.owner
    ) {
      throw new LeaseLostError(lease.runId, lease.epoch, 'this store does not hold it');
    }
    // A claim whose lock connection is gone stays in the map, fenced, until it is released or claimed again.
    if (!this.ctx.lock.isLive(held.generation)) {
      throw new LeaseLostError(lease.runId, lease.epoch, 'the lock connection was lost');
    }
    let renewed: { leaseUntil: number; cancelRequested: boolean } | undefined;
    try {
      const { result } = await this.ctx.lock.run(
        'renew a lease',
        async (db) =>
          (await renewLease(db, this.ctx.names, lease.runId, lease.owner, lease.epoch, ttlMs)) ?? {
            pid: await this.pidOf(db),
            lost: true,
          },
        held.generation,
      );
      renewed = 'lost' in result ? undefined : result;
    } catch (error) {
      throw new LeaseLostError(
        lease.runId,
        lease.epoch,
        `the renewal could not be confirmed (${error instanceof Error ? error.message : String(error)})`,
      );
    }
    if (renewed === undefined) {
      this.held.delete(lease.runId);
      await this.unlockQuietly(held);
      throw new LeaseLostError(lease.runId, lease.epoch);
    }
    return { ...lease, leaseUntil: renewed.leaseUntil, cancelRequested: renewed.cancelRequested };
  }

  async release(lease: Lease): Promise<void> {
    const held = this.held.get(lease.runId);
    const mine =
      held !== undefined &&
      held !== pending &&
      held.epoch === lease.epoch &&
      held.owner === lease.owner;
    if (mine) this.held.delete(lease.runId);
    try {
      await releaseLease(this.ctx.sql, this.ctx.names, lease.runId, lease.owner, lease.epoch);
    } catch (error) {
      throw toStoreError(error, 'release a lease', this.ctx.names.schema);
    } finally {
      if (mine) await this.unlockQuietly(held);
    }
  }

  private async claim(
    runId: string,
    owner: string,
    ttlMs: number,
    reclaimOwn: boolean,
  ): Promise<Lease | undefined> {
    const key = lockKey(runId);
    const { lock, names } = this.ctx;
    let { result, generation } = await lock.run('take an advisory lock', (db) =>
      tryAdvisoryLock(db, key),
    );
    if (!result.locked) {
      let state;
      try {
        state = await breakFrozenHolder(this.ctx.sql, names, runId, key, this.ctx.terminateWaitMs);
      } catch (error) {
        throw toStoreError(error, 'check the holder of a run', names.schema);
      }
      if (state === 'missing') throw new RunNotFoundError(runId);
      if (state === 'live') return undefined;
      // The frozen holder's backend is gone, and its lock with it; a new claimer may still beat us to it.
      ({ result, generation } = await lock.run('take an advisory lock', (db) =>
        tryAdvisoryLock(db, key),
      ));
      if (!result.locked) return undefined;
    }
    const held: Held = { owner, epoch: 0, key, generation };
    let claimed;
    try {
      // The epoch bump commits on the pool, next to other claims; the holder it records is the lock session.
      claimed = await claimRun(this.ctx.sql, names, runId, owner, ttlMs, reclaimOwn, result.pid);
    } catch (error) {
      await this.unlockQuietly(held);
      throw toStoreError(error, 'claim a run', names.schema);
    }
    if (claimed === undefined) {
      await this.unlockQuietly(held);
      let exists;
      try {
        exists = await runExists(this.ctx.sql, names, runId);
      } catch (error) {
        throw toStoreError(error, 'claim a run', names.schema);
      }
      if (!exists) throw new RunNotFoundError(runId);
      return undefined;
    }
    held.epoch = claimed.epoch;
    this.held.set(runId, held);
    return {
      runId,
      owner,
      epoch: claimed.epoch,
      leaseUntil: claimed.leaseUntil,
      recoveries: claimed.recoveries,
      cancelRequested: claimed.cancelRequested,
    };
  }

  private async pidOf(db: Db): Promise<number> {
    const rows = await db.unsafe('SELECT pg_backend_pid()').values();
    return rows[0]?.[0] as number;
  }

  /** Unlocks on the session the lock was taken on; a lost session already dropped it. */
  private async unlockQuietly(held: Held): Promise<void> {
    if (!this.ctx.lock.isLive(held.generation)) return;
    await this.ctx.lock
      .run('release an advisory lock', (db) => advisoryUnlock(db, held.key), held.generation)
      .catch(() => undefined);
  }
}
