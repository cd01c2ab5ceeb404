import type { Clock, TimerHandle } from '@cairn/sdk';

/**
 * What the worker loop sleeps on between passes: a store notification, a freed slot, close(), or the
 * fallback poll interval, whichever comes first. Wakes that arrive while the loop is busy are not lost.
 */
export class Wake {
  private pending = false;
  private resolve: (() => void) | undefined;

  constructor(private readonly clock: Clock) {}

  /** Wakes the loop now, or as soon as it next waits. */
  notify(): void {
    if (this.resolve === undefined) {
      this.pending = true;
      return;
    }
    const resolve = this.resolve;
    this.resolve = undefined;
    resolve();
  }

  /** Resolves on the next `notify`, or after `ms`. */
  wait(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const timer: TimerHandle = this.clock.setTimer(ms, () => this.notify());
      this.resolve = () => {
        timer.cancel();
        resolve();
      };
    });
  }
}
