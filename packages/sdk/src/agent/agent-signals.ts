import { createHash } from 'node:crypto';
import { CairnError } from '../errors.js';
import { checkRunId } from '../run-id.js';
import { canonicalJson, type JsonValue } from '../json.js';
import type { SnapshotStore } from '../store/contract.js';
import {
  decisionSignal,
  type ApprovalDecision,
  type StandingDecision,
} from '../store/decisions.js';
import type { SignalReceipt } from '../store/waits.js';

export { parseApprovalDecision, type ApprovalDecision } from '../store/decisions.js';

/** The signals an agent understands, by name. Others reach its mailbox and are consumed unread. */
export const agentSignals = {
  /** A person's decision on a tool call the approval policy held back (see `ApprovalDecision`). */
  approval: decisionSignal,
  /** A user message added to the conversation at the next trip boundary. */
  followUp: 'cairn.follow-up',
  /**
   * A user message that interrupts the current plan: it ends a wait (calls still waiting for a decision are
   * answered as not approved, a sleep is cut short) and is read before the next model call.
   */
  steer: 'cairn.steer',
} as const;

/** What a run's `wait.detail` lists for a tool call waiting for a decision. */
export interface PendingApprovalView {
  callId: string;
  tool: string;
  args: JsonValue;
  argsHash: string;
  /** When it is decided for the policy's `onTimeout` (ms since the epoch), or null. */
  deadline: number | null;
}

/** The hash an approval names, so that approving one set of arguments never approves another. */
export function toolArgsHash(args: JsonValue): string {
  return createHash('sha256').update(canonicalJson(args)).digest('hex');
}

/** A user message's text from a follow-up or steer signal, whether sent as text or as `{ content }`. */
export function messageText(payload: JsonValue): string | undefined {
  if (typeof payload === 'string') return payload;
  if (payload !== null && typeof payload === 'object' && !Array.isArray(payload)) {
    const content = payload.content;
    if (typeof content === 'string') return content;
  }
  return undefined;
}

/** The tool calls a run waits for a decision on, from its stored wait. */
export function pendingApprovals(detail: JsonValue | undefined): PendingApprovalView[] {
  if (detail === null || typeof detail !== 'object' || Array.isArray(detail)) return [];
  const approvals = detail.approvals;
  return Array.isArray(approvals) ? (approvals as unknown as PendingApprovalView[]) : [];
}

/** What `approve` and `reject` answer: the receipt, and the decision that stands for the call. */
export interface ApprovalReceipt extends SignalReceipt {
  /**
   * The call's standing decision: this one, or, for a repeat (`duplicate`), the first one accepted, which may
   * differ from this one (approving a call that was rejected answers the rejection).
   */
  decision: StandingDecision;
}

/**
 * Sends a decision on a held call. The store accepts it only while the run waits for a decision on that call,
 * and an approval only when it names the hash of the arguments the call waits with, checked in the same step
 * that keeps it: otherwise `INVALID_ARGUMENT`, and nothing is sent. A call's first decision stands: a repeat (a
 * double click, a retried webhook) answers it, at any time, with `duplicate: true`.
 */
export async function sendApprovalDecision(
  store: SnapshotStore,
  runId: string,
  decision: ApprovalDecision,
): Promise<ApprovalReceipt> {
  const receipt = await store.signal(runId, {
    name: agentSignals.approval,
    payload: { ...decision } as unknown as JsonValue,
  });
  if (receipt.decision === undefined) {
    throw new CairnError(
      'STORE_FAILED',
      `The store took the decision on call "${decision.callId}" of run "${runId}" as a plain signal: it ` +
        'does not keep the decision rules of the store contract.',
      { data: { runId, callId: decision.callId } },
    );
  }
  return { seq: receipt.seq, duplicate: receipt.duplicate, decision: receipt.decision };
}

/** The decision methods agents and planners share: `approve` and `reject` a held call of one of their runs. */
export interface ApprovalMethods {
  /**
   * Approves a held call (an agent's tool call, a planner's node) a run waits on; its `wait.detail.approvals`
   * lists them with the `argsHash` an approval must name. The first decision on a call counts; then `resume`
   * (or a worker) continues the run.
   */
  approve(
    runId: string,
    callId: string,
    options: { argsHash: string; by?: string },
  ): Promise<ApprovalReceipt>;
  /**
   * Rejects a held call: an agent's model reads the reason as the call's result; a planner replans. `argsHash`
   * (optional) names the arguments rejected: a repeat sent after a planner held the node again with other input
   * then answers the first rejection instead of rejecting the new holding.
   */
  reject(
    runId: string,
    callId: string,
    options?: { reason?: string; by?: string; argsHash?: string },
  ): Promise<ApprovalReceipt>;
}

/** `approve` and `reject` through the store `store()` gives (it throws when the definition has none). */
export function approvalMethods(store: () => SnapshotStore): ApprovalMethods {
  return {
    approve: (runId, callId, { argsHash, by }) =>
      sendApprovalDecision(store(), checkRunId(runId), {
        callId,
        approved: true,
        argsHash,
        ...(by === undefined ? {} : { by }),
      }),
    reject: (runId, callId, { reason, by, argsHash } = {}) =>
      sendApprovalDecision(store(), checkRunId(runId), {
        callId,
        approved: false,
        ...(argsHash === undefined ? {} : { argsHash }),
        ...(reason === undefined ? {} : { reason }),
        ...(by === undefined ? {} : { by }),
      }),
  };
}

/** The store a definition sends signals through: its durable store, or `STORE_REQUIRED`. */
export function signalStore(
  kind: string,
  name: string,
  store: SnapshotStore | undefined,
): SnapshotStore {
  if (store !== undefined) return store;
  throw new CairnError(
    'STORE_REQUIRED',
    `The ${kind} "${name}" has no durable store to send signals through: pass durable: { store }.`,
  );
}
