import type { Clock, TimerHandle } from '../clock.js';
import { LeaseLostError } from '../errors.js';
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
  /** Called once when a renewal fails or cannot be confirmed: the lease must be taken as lost. */
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

/**
 * Renews a lease every `heartbeatMs` (a third of its ttl at most). A renewal that fails for any reason, or whose outcome is unknown,
 * counts as losing the lease: the holder must stop before its next effect (DESIGN.md, claiming step 4).
 */
export function keepLease(options: LeaseKeeperOptions): LeaseKeeper {
  const { store, ttlMs, clock, onLost } = options;
  let lease = options.lease;
  let deadline = options.deadline;
  let timer: TimerHandle | undefined;
  let stopped = false;

  const interval = Math.max(1, Math.floor(Math.min(options.heartbeatMs ?? ttlMs / 3, ttlMs / 3)));
  const schedule = () => {
    timer = clock.setTimer(interval, () => void renew());
  };

  const renew = async () => {
    if (stopped) return;
    try {
      const sentAt = clock.now();
      lease = await store.renew(lease, ttlMs);
      if (stopped) return;
      deadline = sentAt + ttlMs;
      if (lease.cancelRequested === true) options.onCancelRequested?.();
      schedule();
    } catch (error) {
      if (stopped) return;
      stopped = true;
      onLost(
        error instanceof LeaseLostError
          ? error
          : new LeaseLostError(
              lease.runId,
              lease.epoch,
              `renewal could not be confirmed (${String(error)})`,
            ),
      );
    }
  };

  schedule();
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
