import type { Clock, TimerHandle } from '../clock.js';
import { LeaseLostError } from '../errors.js';
import type { Lease, LeaseStore } from '../store/contract.js';

/** Options of `keepLease`. */
export interface LeaseKeeperOptions {
  store: LeaseStore;
  lease: Lease;
  ttlMs: number;
  clock: Clock;
  /** Called once when a renewal fails or cannot be confirmed: the lease must be taken as lost. */
  onLost(error: LeaseLostError): void;
}

/** A running heartbeat; `stop` cancels the next renewal. */
export interface LeaseKeeper {
  readonly lease: Lease;
  stop(): void;
}

/**
 * Renews a lease every third of its ttl. A renewal that fails for any reason, or whose outcome is unknown,
 * counts as losing the lease: the holder must stop before its next effect (DESIGN.md, claiming step 4).
 */
export function keepLease(options: LeaseKeeperOptions): LeaseKeeper {
  const { store, ttlMs, clock, onLost } = options;
  let lease = options.lease;
  let timer: TimerHandle | undefined;
  let stopped = false;

  const schedule = () => {
    timer = clock.setTimer(Math.max(1, Math.floor(ttlMs / 3)), () => void renew());
  };

  const renew = async () => {
    if (stopped) return;
    try {
      lease = await store.renew(lease, ttlMs);
      if (!stopped) schedule();
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
    stop() {
      stopped = true;
      timer?.cancel();
    },
  };
}
