import {
  CairnError,
  LeaseLostError,
  RunNotFoundError,
  type AcquireOptions,
  type Fence,
  type Lease,
} from '@cairn/sdk';
import type { Db } from './db.js';
import { toStoreError } from './errors.js';
import type { LockConnection } from './lock-connection.js';
import { lockKey, type LockKey } from './lock-key.js';
import type { Names } from './names.js';
import { advisoryUnlock, tryAdvisoryLock } from './sql/advisory-lock.js';
import { claimRun, runExists } from './sql/claim-run.js';
import { releaseLease } from './sql/release-lease.js';
import { renewLease } from './sql/renew-lease.js';

/**
 * A claim this store instance holds, tied to the lock connection's session (`generation`) that renews it;
 * `locked` when that session also holds the run's advisory lock (a claim taken from a frozen holder, whose
 * session still has the lock, holds the lease row only).
 */
interface Held {
  owner: string;
  incarnation: string;
  epoch: number;
  key: LockKey;
  generation: number;
  locked: boolean;
}

/** What the lease logic needs from its store. */
export interface LeaseContext {
  sql: Db;
  names: Names;
  lock: LockConnection;
}

const pending = Symbol('pending');

/**
 * Claims, renewals and releases (DESIGN.md, "Claiming a run"): the advisory lock is the fast hint, the lease
 * row with its incarnation and epoch is the fence. An in-process map refuses a second local claim of a run
 * and ties every claim to the lock connection session it was made on; when that session goes, the claim is
 * fenced. Every way a claim ends (release, a refused renewal or write) frees its entry and its lock.
 */
export class Leases {
  private readonly held = new Map<string, Held | typeof pending>();

  constructor(private readonly ctx: LeaseContext) {}

  /** True when this instance claimed the run under this fence and its lock connection has since been lost. */
  isFenced(fence: Fence): boolean {
    const held = this.mine(fence);
    return held !== undefined && !this.ctx.lock.isLive(held.generation);
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
      return await this.claim(runId, owner, ttlMs, reclaimOwn === true);
    } finally {
      if (this.held.get(runId) === pending) this.held.delete(runId);
    }
  }

  async renew(lease: Lease, ttlMs: number): Promise<Lease> {
    const held = this.mine(lease);
    if (held === undefined || held.owner !== lease.owner) {
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
          (await renewLease(db, this.ctx.names, lease, ttlMs)) ?? {
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
      await this.forget(lease);
      throw new LeaseLostError(lease.runId, lease.epoch);
    }
    return { ...lease, leaseUntil: renewed.leaseUntil, cancelRequested: renewed.cancelRequested };
  }

  async release(lease: Lease): Promise<void> {
    const held = this.mine(lease);
    if (held !== undefined && held.owner === lease.owner) this.held.delete(lease.runId);
    try {
      await releaseLease(this.ctx.sql, this.ctx.names, lease);
    } catch (error) {
      throw toStoreError(error, 'release a lease', this.ctx.names.schema, lease.runId);
    } finally {
      if (held !== undefined && held.owner === lease.owner) await this.unlockQuietly(held);
    }
  }

  /**
   * Drops this instance's claim under `fence` and its advisory lock: the store refused a write made under it,
   * so it is lost (the run taken over, deleted or ended) and must not keep the run locked here.
   */
  async forget(fence: Fence): Promise<void> {
    const held = this.mine(fence);
    if (held === undefined) return;
    this.held.delete(fence.runId);
    await this.unlockQuietly(held);
  }

  /** This instance's claim under exactly this fence (a child's fence names its root's: no claim here). */
  private mine(fence: Fence): Held | undefined {
    const held = this.held.get(fence.runId);
    return held !== undefined &&
      held !== pending &&
      held.epoch === fence.epoch &&
      held.incarnation === fence.incarnation
      ? held
      : undefined;
  }

  private async claim(
    runId: string,
    owner: string,
    ttlMs: number,
    reclaimOwn: boolean,
  ): Promise<Lease | undefined> {
    const key = lockKey(runId);
    const { lock, names } = this.ctx;
    // Taken on the session that will renew the claim; without it (a frozen holder's session still has the
    // lock, or another run's key collides) only a lease that ran out can be claimed, by the row alone.
    const { result, generation } = await lock.run('take an advisory lock', (db) =>
      tryAdvisoryLock(db, key),
    );
    const held: Held = { owner, incarnation: '', epoch: 0, key, generation, locked: result.locked };
    let claimed;
    try {
      // The epoch bump commits on the pool, next to other claims; the holder it records is the lock session.
      claimed = await claimRun(this.ctx.sql, names, {
        runId,
        owner,
        ttlMs,
        reclaimOwn,
        holderPid: result.pid,
        lockHeld: result.locked,
      });
    } catch (error) {
      await this.unlockQuietly(held);
      throw toStoreError(error, 'claim a run', names.schema, runId);
    }
    if (claimed === undefined) {
      await this.unlockQuietly(held);
      let exists;
      try {
        exists = await runExists(this.ctx.sql, names, runId);
      } catch (error) {
        throw toStoreError(error, 'claim a run', names.schema, runId);
      }
      if (!exists) throw new RunNotFoundError(runId);
      return undefined;
    }
    held.epoch = claimed.epoch;
    held.incarnation = claimed.incarnation;
    this.held.set(runId, held);
    return {
      runId,
      incarnation: claimed.incarnation,
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
    if (!held.locked || !this.ctx.lock.isLive(held.generation)) return;
    await this.ctx.lock
      .run('release an advisory lock', (db) => advisoryUnlock(db, held.key), held.generation)
      .catch(() => undefined);
  }
}
