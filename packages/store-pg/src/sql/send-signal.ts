import {
  CairnError,
  checkDecision,
  checkNewSignal,
  decisionRefusal,
  decisionSignal,
  runEndedError,
  RunNotFoundError,
  standingDecision,
  type ApprovalDecision,
  type JsonValue,
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
  if (checked.name === decisionSignal) {
    return sendDecision(db, names, runId, checkDecision(runId, checked.payload));
  }
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
 * Puts a decision in a run's mailbox through the schema's `send_decision` function (migration 000008), which
 * checks it against the run's wait under the row lock, by the rules of the sdk's `decide`.
 */
async function sendDecision(
  db: Db,
  names: Names,
  runId: string,
  decision: ApprovalDecision,
): Promise<SignalReceipt> {
  let rows: unknown[][];
  try {
    rows = await query(
      db,
      `SELECT d.seq::float8, d.duplicate, d.decision::text
         FROM ${names.sendDecision}($1::text, $2::text::jsonb) d`,
      [runId, JSON.stringify(decision)],
    );
  } catch (error) {
    throw signalRefusal(error, runId, decision.callId) ?? error;
  }
  const [seq, duplicate, kept] = rows[0]!;
  return {
    seq: seq as number,
    duplicate: duplicate === true,
    decision: standingDecision(JSON.parse(kept as string) as JsonValue),
  };
}

/**
 * The typed error of a refusal `send_signal` or `send_decision` raised (its SQLSTATE, DETAIL and HINT), or
 * undefined for any other error, which the store maps as it maps every driver error.
 */
export function signalRefusal(
  error: unknown,
  runId: string,
  callId?: string,
): CairnError | undefined {
  const { code, detail, hint, message, severity } = (error ?? {}) as Record<string, unknown>;
  if (typeof severity !== 'string' || typeof message !== 'string') return undefined;
  if (code === '22023' && hint === 'cairn.decision' && typeof detail === 'string') {
    const refused = JSON.parse(detail) as {
      reason: string;
      status: string;
      argsHash: string | null;
    };
    return decisionRefusal(runId, callId ?? '', {
      reason: refused.reason === 'other arguments' ? 'other-arguments' : 'not-waiting',
      status: refused.status,
      ...(refused.argsHash === null ? {} : { argsHash: refused.argsHash }),
    });
  }
  if (code === 'P0002') return new RunNotFoundError(runId);
  if (code === '55000' && typeof detail === 'string') return runEndedError(runId, detail);
  if (code === '22023') {
    return new CairnError('INVALID_ARGUMENT', message, {
      data: typeof detail === 'string' ? { runId, rootRunId: detail } : { runId },
    });
  }
  return undefined;
}
