import { runEndedError } from '../errors.js';
import { isTerminalStatus } from './contract.js';
import {
  decide,
  decisionRefusal,
  decisionSignal,
  type ApprovalDecision,
  type KeptDecision,
} from './decisions.js';
import type { MemoryRun } from './memory-runs.js';
import type { SignalReceipt } from './waits.js';

/**
 * Puts a decision in a memory run's mailbox by the rules of `decide` (see `decisions.ts`): the standing decision
 * for a repeat, `INVALID_ARGUMENT` when the run does not wait for the call with those arguments, `RUN_ENDED` for
 * a run that ended. An accepted one is stamped `now`.
 */
export function signalDecision(
  run: MemoryRun,
  decision: ApprovalDecision,
  now: number,
): SignalReceipt {
  const { record } = run;
  const decisions = run.signals.filter(
    (signal) => signal.name === decisionSignal && signal.idempotencyKey !== null,
  );
  const kept = (key: string): KeptDecision | undefined =>
    decisions.find((signal) => signal.idempotencyKey === key);
  const latestFor = (callId: string): KeptDecision | undefined =>
    decisions.filter((signal) => (signal.payload as { callId?: unknown }).callId === callId).at(-1);
  const verdict = decide(record, decision, kept, latestFor);
  if (verdict.type === 'duplicate') {
    return { seq: verdict.seq, duplicate: true, decision: verdict.decision };
  }
  if (isTerminalStatus(record.status)) throw runEndedError(record.runId, record.status);
  if (verdict.type === 'refuse') {
    throw decisionRefusal(record.runId, decision.callId, { ...verdict, status: record.status });
  }
  const seq = run.signals.length + 1;
  const payload = JSON.parse(JSON.stringify(verdict.decision)) as SignalReceipt['decision'];
  run.signals.push({
    seq,
    name: decisionSignal,
    payload: payload as never,
    idempotencyKey: verdict.key,
    at: now,
  });
  record.updatedAt = now;
  return { seq, duplicate: false, decision: verdict.decision };
}
