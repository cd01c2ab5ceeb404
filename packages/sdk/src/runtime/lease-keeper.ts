import type { Clock, TimerHandle } from '../clock.js';
import { isCairnError, LeaseLostError } from '../errors.js';
import type { Lease, LeaseStore } from '../store/contract.js';

/** Options of `keepLease`. */
export interface LeaseKeeperOptions {
  store: LeaseStore;
  lease: Lease;
  ttlMs: number;
  /** Renewal interval; at most a third of the ttl. @defaultValue ttlMs / 3 */
  heartbeatMs?: number;
  clock: Clock;
  /** When the claimed lease may run out on the local clock: the time the claim was sent plus the ttl. */
  deadline: number;
  /** Called when a renewal reports that a client asked to cancel the run. */
  onCancelRequested?(): void;
  /**
   * Called once when the store refuses a renewal, fails it for good, or cannot confirm one before the lease
   * runs out on the local clock: the lease must be taken as lost.
   */
  onLost(error: LeaseLostError): void;
}

/** A running heartbeat; `stop` cancels the next renewal. */
export interface LeaseKeeper {
  readonly lease: Lease;
  /**
   * When the lease may run out, on the local clock: the time the last confirmed renewal (or the claim) was
   * sent, plus the ttl. A process that stalled past it cannot know it still holds the lease.
   */
  readonly deadline: number;
  stop(): void;
}

/** The first wait before a renewal that could not reach the store is sent again; it doubles up to a second. */
const firstRetryMs = 100;

/**
 * Renews a lease every `heartbeatMs` (a third of its ttl at most). A renewal the store refuses, or fails with an
 * error that is not retryable, loses the lease at once. One that cannot reach the store (a retryable error: a
 * Redis Cluster electing a new master, a Postgres primary restarting) is sent again with backoff for as long as
 * the lease certainly holds: until its deadline on the local clock, which counts from when the last confirmed
 * renewal was sent, so no other holder can have claimed the run before it. Past it the lease is lost, and the
 * attempt, which checks the deadline before every effect, has already stopped starting any (DESIGN.md, claiming
 * step 4). A store failover shorter than the lease so costs a stall, not the run's lease.
 */
export function keepLease(options: LeaseKeeperOptions): LeaseKeeper {
  const { store, ttlMs, clock, onLost } = options;
  let lease = options.lease;
  let deadline = options.deadline;
  let timer: TimerHandle | undefined;
  let stopped = false;

  const interval = Math.max(1, Math.floor(Math.min(options.heartbeatMs ?? ttlMs / 3, ttlMs / 3)));
  const schedule = (ms: number, retry: number) => {
    timer = clock.setTimer(ms, () => void renew(retry));
  };
  const lose = (error: LeaseLostError) => {
    stopped = true;
    onLost(error);
  };

  const renew = async (retry: number) => {
    if (stopped) return;
    try {
      const sentAt = clock.now();
      lease = await store.renew(lease, ttlMs);
      if (stopped) return;
      deadline = sentAt + ttlMs;
      if (lease.cancelRequested === true) options.onCancelRequested?.();
      schedule(interval, 0);
    } catch (error) {
      if (stopped) return;
      if (error instanceof LeaseLostError) return lose(error);
      const unconfirmed = () =>
        new LeaseLostError(
          lease.runId,
          lease.epoch,
          `renewal could not be confirmed (${String(error)})`,
        );
      if (!(isCairnError(error) && error.retryable)) return lose(unconfirmed());
      const wait = Math.min(firstRetryMs * 2 ** retry, 1_000, interval);
      if (clock.now() + wait >= deadline) return lose(unconfirmed());
      schedule(wait, retry + 1);
    }
  };

  schedule(interval, 0);
  return {
    get lease() {
      return lease;
    },
    get deadline() {
      return deadline;
    },
    stop() {
      stopped = true;
      timer?.cancel();
    },
  };
}

/**
 * Gives a lease back, waiting for a store that cannot be reached (a failover) for as long as the lease is
 * still ours: until `deadline` on the local clock. Given back, the run is claimable at once and its next claim
 * counts no recovery; past the deadline it runs out on its own. Never throws: releasing is a courtesy, the
 * fence is what keeps the run safe.
 */
export async function releaseWhileHeld(
  store: LeaseStore,
  lease: Lease,
  deadline: number,
  clock: Clock,
): Promise<void> {
  for (let retry = 0; ; retry += 1) {
    try {
      await store.release(lease);
      return;
    } catch (error) {
      const wait = Math.min(firstRetryMs * 2 ** retry, 1_000);
      if (!(isCairnError(error) && error.retryable) || clock.now() + wait >= deadline) return;
      await clock.sleep(wait);
    }
  }
}
