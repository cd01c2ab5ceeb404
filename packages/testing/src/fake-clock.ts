import type { Clock, TimerHandle } from '@cairn/sdk';

/** A clock that moves only when told to, with timers that fire in order as it moves. */
export interface FakeClock extends Clock {
  /** Moves time forward by `ms`, firing every timer that falls due on the way, in order. */
  advance(ms: number): Promise<void>;
  /** Timers scheduled and not yet fired or cancelled. */
  pendingTimers(): number;
}

/** Options of `createFakeClock`. */
export interface FakeClockOptions {
  /** The starting time, in milliseconds since the epoch. @defaultValue 2026-01-01T00:00:00Z */
  now?: number;
  /**
   * `sleep` moves time forward by itself instead of waiting for `advance`, like a time-skipping test
   * server: backoffs and retries finish at once while still being measured in fake time. @defaultValue false
   */
  autoAdvance?: boolean;
}

interface Timer {
  id: number;
  due: number;
  callback: () => void;
}

/** Lets callbacks and the promises they settle run before time moves again. */
async function drain(): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Creates a fake clock for tests: time moves only through `advance` (or `sleep`, with `autoAdvance`). */
export function createFakeClock(options: FakeClockOptions = {}): FakeClock {
  let now = options.now ?? Date.UTC(2026, 0, 1);
  let nextId = 0;
  const timers: Timer[] = [];

  const schedule = (ms: number, callback: () => void): TimerHandle => {
    const timer = { id: nextId++, due: now + Math.max(0, ms), callback };
    timers.push(timer);
    return {
      cancel() {
        const index = timers.indexOf(timer);
        if (index >= 0) timers.splice(index, 1);
      },
    };
  };

  const advance = async (ms: number): Promise<void> => {
    const target = now + Math.max(0, ms);
    for (;;) {
      let next: Timer | undefined;
      for (const timer of timers) {
        if (
          timer.due <= target &&
          (next === undefined ||
            timer.due < next.due ||
            (timer.due === next.due && timer.id < next.id))
        ) {
          next = timer;
        }
      }
      if (next === undefined) break;
      timers.splice(timers.indexOf(next), 1);
      now = Math.max(now, next.due);
      next.callback();
      await drain();
    }
    now = target;
  };

  return {
    now: () => now,
    setTimer: schedule,
    advance,
    pendingTimers: () => timers.length,
    sleep(ms, signal) {
      return new Promise<void>((resolve, reject) => {
        if (signal?.aborted) {
          reject(signal.reason);
          return;
        }
        const onAbort = () => {
          handle.cancel();
          reject(signal?.reason);
        };
        const handle = schedule(ms, () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        });
        signal?.addEventListener('abort', onAbort, { once: true });
        if (options.autoAdvance) void advance(ms);
      });
    },
  };
}
