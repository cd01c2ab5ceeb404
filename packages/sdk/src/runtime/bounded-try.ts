import type { Clock, TimerHandle } from '../clock.js';

/**
 * How long a stopping attempt (cancelled, lease lost, crashed) still waits for an effect once it aborted the
 * effect's signal. An effect that honours its signal has ended by then; one that ignores it is abandoned.
 */
export const abortGraceMs = 1_000;

/** What bounds one try of an effect. */
export interface TryBounds {
  clock: Clock;
  /** The attempt's signal: its abort reaches the try's signal and starts the grace. */
  stop: AbortSignal;
  /** Past it the try's signal aborts with what `timeout()` makes, and the try rejects with it. */
  timeoutMs: number | undefined;
  timeout(): unknown;
  /** False once the try cannot be abandoned (it started a child run, which stops on its own). */
  abandonable(): boolean;
}

/**
 * Runs one try of an effect with a signal of its own, and stops waiting for it when it runs past its timeout
 * (rejecting with `timeout()`) or, once the attempt stopped, past `abortGraceMs` (rejecting with the attempt's
 * abort reason, as a try that honours its signal would). An abandoned try is left to itself: whatever it
 * settles with later is dropped. Whichever ends the try first decides its outcome; the others are cancelled.
 */
export function boundedTry<T>(
  run: (signal: AbortSignal) => Promise<T>,
  bounds: TryBounds,
): Promise<T> {
  const { clock, stop } = bounds;
  const controller = new AbortController();
  return new Promise<T>((resolve, reject) => {
    let ended = false;
    let timer: TimerHandle | undefined;
    let grace: TimerHandle | undefined;
    const end = (finish: () => void) => {
      if (ended) return;
      ended = true;
      timer?.cancel();
      grace?.cancel();
      stop.removeEventListener('abort', onStop);
      finish();
    };
    const abandon = (reason: unknown) => {
      if (!bounds.abandonable()) return;
      controller.abort(reason);
      end(() => reject(reason));
    };
    const onStop = () => {
      controller.abort(stop.reason);
      grace = clock.setTimer(abortGraceMs, () => abandon(stop.reason));
    };
    // Armed before the try starts: a try settling at the very moment it times out has timed out.
    if (bounds.timeoutMs !== undefined) {
      timer = clock.setTimer(bounds.timeoutMs, () => abandon(bounds.timeout()));
    }
    if (stop.aborted) onStop();
    else stop.addEventListener('abort', onStop, { once: true });
    let running: Promise<T>;
    try {
      running = run(controller.signal);
    } catch (error) {
      running = Promise.reject(error);
    }
    running.then(
      (value) => end(() => resolve(value)),
      (error: unknown) => end(() => reject(error)),
    );
  });
}
