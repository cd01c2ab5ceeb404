import {
  CairnError,
  checkNewSignal,
  runEndedError,
  RunNotFoundError,
  type NewSignal,
  type SignalReceipt,
} from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * Puts a signal in a run's mailbox through the schema's `send_signal` function (migration 000006), the one
 * implementation an application also calls inside its own transactions: it takes the next seq (a key seen
 * before returns the first signal's seq, `duplicate`; concurrent signals meet on unique indexes), and marks a
 * waiting run the signal wakes, which notifies workers at commit. Not fenced: no lease is needed. Refusals come
 * back as the typed errors of `SnapshotStore.signal`.
 */
export async function sendSignal(
  db: Db,
  names: Names,
  runId: string,
  signal: NewSignal,
): Promise<SignalReceipt> {
  const checked = checkNewSignal(signal);
  let rows: unknown[][];
  try {
    rows = await query(
      db,
      `SELECT s.seq::float8, s.duplicate
         FROM ${names.sendSignal}($1::text, $2::text, $3::text::jsonb, $4::text) s`,
      [runId, checked.name, JSON.stringify(checked.payload), checked.idempotencyKey],
    );
  } catch (error) {
    throw signalRefusal(error, runId) ?? error;
  }
  const [seq, duplicate] = rows[0]!;
  return { seq: seq as number, duplicate: duplicate === true };
}

/**
 * The typed error of a refusal `send_signal` raised (its SQLSTATE and DETAIL), or undefined for any other
 * error, which the store maps as it maps every driver error.
 */
export function signalRefusal(error: unknown, runId: string): CairnError | undefined {
  const { code, detail, message, severity } = (error ?? {}) as Record<string, unknown>;
  if (typeof severity !== 'string' || typeof message !== 'string') return undefined;
  if (code === 'P0002') return new RunNotFoundError(runId);
  if (code === '55000' && typeof detail === 'string') return runEndedError(runId, detail);
  if (code === '22023') {
    return new CairnError('INVALID_ARGUMENT', message, {
      data: typeof detail === 'string' ? { runId, rootRunId: detail } : { runId },
    });
  }
  return undefined;
}
