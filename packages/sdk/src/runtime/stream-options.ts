import { CairnError } from '../errors.js';
import type { DurableStore } from '../store/contract.js';

/** How a run's stream is written: deltas are held briefly and appended together. */
export interface StreamOptions {
  /** How long a delta is held before it is appended with those that came after it. @defaultValue 40 */
  coalesceMs?: number;
  /** Characters held at which they are appended at once, however young. @defaultValue 400 */
  coalesceChars?: number;
}

/**
 * Checks `stream` options where they are given (a worker's, a definition's), so a bad value is a typed error
 * at once, not a run that fails later.
 */
export function checkStreamOptions(stream: boolean | StreamOptions | undefined): void {
  if (stream === undefined || typeof stream === 'boolean') return;
  const { coalesceMs, coalesceChars } = stream;
  if (coalesceMs !== undefined && !(Number.isFinite(coalesceMs) && coalesceMs >= 0)) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `stream.coalesceMs must be a number of ms from 0, not ${coalesceMs}.`,
    );
  }
  if (coalesceChars !== undefined && !(Number.isSafeInteger(coalesceChars) && coalesceChars >= 1)) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `stream.coalesceChars must be a whole number from 1, not ${coalesceChars}.`,
    );
  }
}

/**
 * Refuses `stream` on a store that keeps no stream log (a store of its own without `appendStream`,
 * `readStream` and `streamPosition`), where it is configured: silently not streaming would leave a chat UI
 * waiting on a run that says nothing.
 */
export function checkStreamStore(
  store: DurableStore,
  stream: boolean | StreamOptions | undefined,
  what = 'This run',
): void {
  if (stream === undefined || stream === false) return;
  if (
    store.appendStream !== undefined &&
    store.readStream !== undefined &&
    store.streamPosition !== undefined
  ) {
    return;
  }
  throw new CairnError(
    'INVALID_ARGUMENT',
    `${what} would stream, but its store keeps no stream log (it has no appendStream, readStream and streamPosition): ` +
      'use a store that has them (memory, Postgres, Redis) or turn stream off.',
  );
}
