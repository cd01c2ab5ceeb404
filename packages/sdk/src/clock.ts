/** A scheduled callback that can be cancelled before it fires. */
export interface TimerHandle {
  cancel(): void;
}

/**
 * The only way the runtime reads time or waits. Tests hand in the fake clock from `@cairn/testing`.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason when the signal aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Calls `callback` once after `ms`, unless cancelled. */
  setTimer(ms: number, callback: () => void): TimerHandle;
}

/** The wall clock and Node's timers. Timers are unref'd so a pending heartbeat never keeps a process alive. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep(ms, signal) {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
  setTimer(ms, callback) {
    const timer = setTimeout(callback, ms);
    timer.unref?.();
    return { cancel: () => clearTimeout(timer) };
  },
};
