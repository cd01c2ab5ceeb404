import { createHash } from 'node:crypto';
import { CairnError } from '../errors.js';
import type { JsonValue } from '../json.js';
import type { RunStatus } from './contract.js';
import type { RunWait } from './waits.js';

/**
 * Decisions on held calls (an agent's tool call, a planner's node) are signals of one reserved name, which every
 * store checks against the run's wait in the same step that accepts them (see `SnapshotStore.signal`): a
 * decision is accepted only while the run waits for that call, an approval only for the arguments it waits
 * with, and a call's first decision is the one that stands. The rules live here; each store applies them in
 * its own statement or script, and the conformance suite holds them to the same answers.
 */

/** The name of the signal that carries a decision on a held call. */
export const decisionSignal = 'cairn.approval';

/** A decision on a held call, as the approval signal carries it. */
export interface ApprovalDecision {
  callId: string;
  approved: boolean;
  /** The hash of the arguments the decision is about (`toolArgsHash`); required to approve. */
  argsHash?: string;
  /** Who decided, for the record. */
  by?: string;
  /** Why, for a rejection: the model reads it as the call's result. */
  reason?: string;
}

/** A decision as a store keeps it: with the hash of the arguments the call waited with. */
export interface StandingDecision extends ApprovalDecision {
  argsHash: string;
}

/** Reads an approval signal's payload; undefined for one that is not a decision. */
export function parseApprovalDecision(payload: JsonValue): ApprovalDecision | undefined {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return undefined;
  const { callId, approved, argsHash, by, reason } = payload;
  if (typeof callId !== 'string' || callId === '' || typeof approved !== 'boolean')
    return undefined;
  if (approved && typeof argsHash !== 'string') return undefined;
  return {
    callId,
    approved,
    ...(typeof argsHash === 'string' ? { argsHash } : {}),
    ...(typeof by === 'string' ? { by } : {}),
    ...(typeof reason === 'string' ? { reason } : {}),
  };
}

/** The decision a payload sent as a decision signal carries, or `INVALID_ARGUMENT`. */
export function checkDecision(runId: string, payload: JsonValue): ApprovalDecision {
  const decision = parseApprovalDecision(payload);
  if (decision !== undefined) return decision;
  throw new CairnError(
    'INVALID_ARGUMENT',
    `A "${decisionSignal}" signal must carry a decision: { callId, approved, argsHash (to approve), ` +
      'by?, reason? }.',
    { data: { runId, reason: 'not a decision' } },
  );
}

/** The hex SHA-256 of a call id: a decision's key names the call by it, so any call id fits a key. */
export function callKey(callId: string): string {
  return createHash('sha256').update(callId, 'utf8').digest('hex');
}

/**
 * The idempotency key a store gives a decision on `callId` waiting with `argsHash`: one decision per call and
 * arguments (a planner node held again with other input after a replan is decided anew). A sender's own key on
 * a decision is not used.
 */
export function decisionKey(callId: string, argsHash: string): string {
  return `${decisionSignal}:${callKey(callId)}:${argsHash}`;
}

/** The hash of the arguments the run's stored wait lists `callId` with, if it waits for a decision on it. */
export function waitedArgsHash(
  run: { status: RunStatus; wait: RunWait | null },
  callId: string,
): string | undefined {
  if (run.status !== 'waiting') return undefined;
  const detail = run.wait?.detail;
  if (detail === null || typeof detail !== 'object' || Array.isArray(detail)) return undefined;
  const approvals = detail.approvals;
  if (!Array.isArray(approvals)) return undefined;
  for (const call of approvals) {
    if (call === null || typeof call !== 'object' || Array.isArray(call)) continue;
    if (call.callId === callId && typeof call.argsHash === 'string') return call.argsHash;
  }
  return undefined;
}

/** What a store does with a decision: answer the standing one, accept it under `key`, or refuse it. */
export type DecisionVerdict =
  | { type: 'duplicate'; seq: number; decision: StandingDecision }
  | { type: 'accept'; key: string; decision: StandingDecision }
  | { type: 'refuse'; reason: 'not-waiting' | 'other-arguments'; argsHash?: string };

/** A decision a store kept, by its seq and payload. */
export interface KeptDecision {
  seq: number;
  payload: JsonValue;
}

/**
 * The rules, in order: a decision on a call and arguments that already has one answers that one (`duplicate`, at
 * any time, the run ended or not); a rejection that names no arguments is about the ones the call waits with, or,
 * when it no longer waits, the call's latest decision. Otherwise the run must wait for a decision on the call
 * (`not-waiting`), an approval with the arguments it waits with (`other-arguments`); then the decision is
 * accepted, keeping the hash. The caller refuses a run in a final status (`RUN_ENDED`) after a duplicate.
 */
export function decide(
  run: { status: RunStatus; wait: RunWait | null },
  decision: ApprovalDecision,
  kept: (key: string) => KeptDecision | undefined,
  latestFor: (callId: string) => KeptDecision | undefined,
): DecisionVerdict {
  const waited = waitedArgsHash(run, decision.callId);
  const argsHash = decision.argsHash ?? waited;
  const standing =
    argsHash === undefined
      ? latestFor(decision.callId)
      : kept(decisionKey(decision.callId, argsHash));
  if (standing !== undefined) {
    return { type: 'duplicate', seq: standing.seq, decision: standingDecision(standing.payload) };
  }
  if (waited === undefined) return { type: 'refuse', reason: 'not-waiting' };
  if (argsHash !== waited) return { type: 'refuse', reason: 'other-arguments', argsHash: waited };
  return {
    type: 'accept',
    key: decisionKey(decision.callId, waited),
    decision: { ...decision, argsHash: waited },
  };
}

/** A kept decision's payload as the decision it is. */
export function standingDecision(payload: JsonValue): StandingDecision {
  return parseApprovalDecision(payload) as StandingDecision;
}

/** The error a store refuses a decision with. */
export function decisionRefusal(
  runId: string,
  callId: string,
  refusal: { reason: 'not-waiting' | 'other-arguments'; argsHash?: string; status?: string },
): CairnError {
  if (refusal.reason === 'other-arguments') {
    return new CairnError(
      'INVALID_ARGUMENT',
      `The approval of call "${callId}" names other arguments than run "${runId}" waits with: read them ` +
        'again (`waitingFor`) before approving.',
      { data: { runId, callId, reason: 'other arguments', argsHash: refusal.argsHash ?? null } },
    );
  }
  return new CairnError(
    'INVALID_ARGUMENT',
    `Run "${runId}" is not waiting for a decision on call "${callId}"` +
      (refusal.status === undefined ? '' : ` (it is ${refusal.status})`) +
      ': nothing was sent.',
    { data: { runId, callId, reason: 'not waiting', status: refusal.status ?? null } },
  );
}
