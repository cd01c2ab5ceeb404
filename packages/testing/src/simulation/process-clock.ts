import type { Clock, TimerHandle } from '@cairn/sdk';
import type { FakeClock } from '../fake-clock.js';

/**
 * One simulated process's view of the shared fake clock. Its timers (heartbeats, backoffs) fire as the
 * shared clock moves, except while the process is frozen (they fire late, when it thaws, as a stopped
 * process's would) and after it died (never). Its reading of the time is always the shared one, so a process
 * that wakes from a freeze longer than its lease knows it.
 */
export class ProcessClock implements Clock {
  private frozen = false;
  private dead = false;
  private late: Array<() => void> = [];

  constructor(private readonly clock: FakeClock) {}

  now(): number {
    return this.clock.now();
  }

  setTimer(ms: number, callback: () => void): TimerHandle {
    let cancelled = false;
    const handle = this.clock.setTimer(ms, () => this.fire(() => !cancelled && callback()));
    return {
      cancel() {
        cancelled = true;
        handle.cancel();
      },
    };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = () => {
        timer.cancel();
        reject(signal?.reason);
      };
      const timer = this.setTimer(ms, () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  freeze(): void {
    this.frozen = true;
  }

  thaw(): void {
    this.frozen = false;
    for (const callback of this.late.splice(0)) if (!this.dead) callback();
  }

  kill(): void {
    this.dead = true;
    this.late = [];
  }

  private fire(callback: () => void): void {
    if (this.dead) return;
    if (this.frozen) this.late.push(callback);
    else callback();
  }
}
