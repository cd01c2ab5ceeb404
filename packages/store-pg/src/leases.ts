import {
  CairnError,
  isCairnError,
  LeaseLostError,
  RunNotFoundError,
  type AcquireOptions,
  type ClaimOptions,
  type Fence,
  type Lease,
} from '@cairn/sdk';
import type { Db } from './db.js';
import { toStoreError } from './errors.js';
import type { Names } from './names.js';
import type { LivenessSession } from './session.js';
import { claimRun, runExists } from './sql/claim-run.js';
import { claimRuns } from './sql/claim-runs.js';
import { probeSessions } from './sql/probe-sessions.js';
import { releaseLeases } from './sql/release-leases.js';
import { renewLeases, type Renewal, type RenewalOutcome } from './sql/renew-leases.js';
import { WriteBatcher } from './write-batcher.js';

/** What the lease logic needs from its store. */
export interface LeaseContext {
  sql: Db;
  names: Names;
  /** The instance's liveness session; none in lease-only mode. */
  session: LivenessSession | undefined;
  instance: string;
  /** How long a session must have been found dead before another instance's batch claim takes its runs. */
  graceMs: number;
  /** How often batch claims look for sessions that are gone. */
  probeMs: number;
}

const fenceKey = (fence: Fence) => `${fence.runId}@${fence.incarnation}#${fence.epoch}`;

function checkTtl(ttlMs: number): void {
  if (!(ttlMs > 0) || !Number.isFinite(ttlMs)) {
    throw new CairnError('INVALID_ARGUMENT', `ttlMs must be a positive number, got ${ttlMs}.`);
  }
}

/**
 * Claims, renewals and releases (store-pg README, "How a claim works"). The lease row with its incarnation
 * and epoch is the fence; the instance's liveness session tells claimers whether a holder is alive. Claims,
 * renewals and releases of many runs share statements on the pool, and a row another transaction holds is
 * skipped, never waited for, so one run's trouble never holds up another's lease.
 */
export class Leases {
  /** Leases a final checkpoint already gave up: their `release` needs no statement. */
  private readonly released = new Set<string>();
  private readonly renewals: WriteBatcher<Renewal, RenewalOutcome>;
  private readonly releases: WriteBatcher<Lease, boolean>;
  private probed = 0;
  private probing: Promise<unknown> | undefined;
  private swept = 0;

  constructor(private readonly ctx: LeaseContext) {
    const { sql, names } = ctx;
    this.renewals = new WriteBatcher(
      async (renewals) => {
        try {
          return (await renewLeases(sql, names, renewals)).map((value) => ({ value }));
        } catch (error) {
          throw toStoreError(error, 'renew leases', names.schema);
        }
      },
      { keyOf: (renewal) => renewal.lease.runId },
    );
    this.releases = new WriteBatcher(
      async (leases) => {
        try {
          return (await releaseLeases(sql, names, leases)).map((value) => ({ value }));
        } catch (error) {
          throw toStoreError(error, 'release leases', names.schema);
        }
      },
      { keyOf: (lease) => lease.runId },
    );
  }

  async acquire(
    runId: string,
    { owner, ttlMs, reclaimOwn }: AcquireOptions,
  ): Promise<Lease | undefined> {
    checkTtl(ttlMs);
    const { sql, names, session } = this.ctx;
    try {
      // Sessions found gone are marked dead: the grace of another instance's counts from then.
      await this.probe();
      const lease = await this.underOwnSession((sessionId) =>
        claimRun(sql, names, {
          runId,
          owner,
          ttlMs,
          reclaimOwn: reclaimOwn === true,
          session: sessionId,
          instance: this.ctx.instance,
          takeOthers: session === undefined || session.mayTakeOthers(this.ctx.graceMs),
          graceMs: this.ctx.graceMs,
        }),
      );
      if (lease !== undefined) return lease;
      if (!(await runExists(sql, names, runId))) throw new RunNotFoundError(runId);
      return undefined;
    } catch (error) {
      throw toStoreError(error, 'claim a run', names.schema, runId);
    }
  }

  async claim(options: ClaimOptions): Promise<Lease[]> {
    checkTtl(options.ttlMs);
    const { sql, names, session } = this.ctx;
    try {
      await this.probe();
      const now = Date.now();
      // Leases that ran out are looked for now and then: with sessions, a crash is seen by its session and
      // only a frozen or leaked holder is left to this; without them, it is the only way to see a crash.
      const sweepEvery = session === undefined ? this.ctx.probeMs : options.ttlMs / 2;
      const sweepExpired = now - this.swept >= sweepEvery;
      if (sweepExpired) this.swept = now;
      return await this.underOwnSession((sessionId) =>
        claimRuns(sql, names, {
          owner: options.owner,
          ttlMs: options.ttlMs,
          limit: options.limit,
          definitions: options.definitions,
          reclaimOwner: options.reclaimOwner ?? null,
          session: sessionId,
          instance: this.ctx.instance,
          // After its own session reopened, an instance leaves other instances' runs alone for a grace: after a
          // failover every instance first takes its own runs back.
          takeOthers: session === undefined || session.mayTakeOthers(this.ctx.graceMs, now),
          graceMs: this.ctx.graceMs,
          sweepExpired,
          skip: options.skip ?? [],
          now: options.now ?? null,
        }),
      );
    } catch (error) {
      throw toStoreError(error, 'claim runs', names.schema);
    }
  }

  /**
   * Runs a claim under this instance's session (null without sessions). A claim that finds the session
   * already gone claims nothing: the session is reopened (its runs move to the new one) and the claim made
   * once more under it.
   */
  private async underOwnSession<T>(
    claim: (session: number | null) => Promise<T | 'session-lost'>,
  ): Promise<T> {
    const { session, names } = this.ctx;
    for (let attempt = 1; ; attempt += 1) {
      const id = (await session?.id()) ?? null;
      const claimed = await claim(id);
      if (claimed !== 'session-lost') return claimed;
      if (id !== null) session?.reportLost(id);
      if (attempt === 2) {
        throw new CairnError(
          'STORE_UNAVAILABLE',
          `The store's session in schema "${names.schema}" was lost twice while claiming; try again.`,
          { retryable: true, data: { schema: names.schema } },
        );
      }
    }
  }

  /**
   * Extends a lease. A renewal whose row another transaction holds, or that the database could not take (a
   * lost connection, a restart: a retryable error), is tried again shortly; one that cannot be confirmed
   * within a third of the lease is lost (DESIGN.md: a renewal that cannot be confirmed is a loss). Sending it
   * again is safe: it is fenced like the first, and the holder's local deadline still counts from the last
   * renewal confirmed.
   */
  async renew(lease: Lease, ttlMs: number): Promise<Lease> {
    checkTtl(ttlMs);
    const giveUp = Date.now() + ttlMs / 3;
    for (let wait = 10; ; wait = Math.min(wait * 2, 200)) {
      let outcome: RenewalOutcome;
      try {
        outcome = await this.renewals.submit({ lease, ttlMs });
      } catch (error) {
        if (!(isCairnError(error) && error.retryable) || Date.now() + wait > giveUp) {
          throw new LeaseLostError(
            lease.runId,
            lease.epoch,
            `the renewal could not be confirmed (${error instanceof Error ? error.message : String(error)})`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, wait));
        continue;
      }
      if (outcome.type === 'renewed') {
        return {
          ...lease,
          leaseUntil: outcome.leaseUntil,
          cancelRequested: outcome.cancelRequested,
        };
      }
      if (outcome.type === 'lost') throw new LeaseLostError(lease.runId, lease.epoch);
      if (Date.now() + wait > giveUp) {
        throw new LeaseLostError(
          lease.runId,
          lease.epoch,
          'its row stayed locked by another transaction, so the renewal could not be confirmed',
        );
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  async release(lease: Lease): Promise<void> {
    if (this.released.delete(fenceKey(lease))) return;
    // A child's lease is its root's: nothing to give up.
    if (lease.root !== undefined) return;
    await this.releases.submit(lease);
  }

  /** A final checkpoint gave this lease up: the `release` after it needs no statement. */
  releasedBySave(fence: Fence): void {
    this.released.add(fenceKey(fence));
  }

  /** Marks the sessions that are gone, at most once per `probeMs` (and once at a time). */
  private async probe(): Promise<void> {
    const { session } = this.ctx;
    if (session === undefined) return;
    if (this.probing !== undefined) {
      await this.probing;
      return;
    }
    if (Date.now() - this.probed < this.ctx.probeMs) return;
    this.probed = Date.now();
    this.probing = probeSessions(this.ctx.sql, this.ctx.names, session.mine()).finally(() => {
      this.probing = undefined;
    });
    await this.probing;
  }
}
