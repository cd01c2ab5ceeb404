import { createHash } from 'node:crypto';
import { CairnError, RunNotFoundError } from '../errors.js';
import { checkRunId } from '../run-id.js';
import { canonicalJson, type JsonValue } from '../json.js';
import type { SnapshotStore } from '../store/contract.js';
import type { NewSignal, SignalReceipt } from '../store/waits.js';

/** The signals an agent understands, by name. Others reach its mailbox and are consumed unread. */
export const agentSignals = {
  /** A person's decision on a tool call the approval policy held back. */
  approval: 'cairn.approval',
  /** A user message added to the conversation at the next trip boundary. */
  followUp: 'cairn.follow-up',
  /**
   * A user message that interrupts the current plan: it ends a wait (calls still waiting for a decision are
   * answered as not approved, a sleep is cut short) and is read before the next model call.
   */
  steer: 'cairn.steer',
} as const;

/** A decision on a held tool call, as the approval signal carries it. */
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

/** Reads an approval signal's payload; undefined for one that is not a decision. */
export function parseApprovalDecision(payload: JsonValue): ApprovalDecision | undefined {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return undefined;
  const { callId, approved, argsHash, by, reason } = payload;
  if (typeof callId !== 'string' || typeof approved !== 'boolean') return undefined;
  return {
    callId,
    approved,
    ...(typeof argsHash === 'string' ? { argsHash } : {}),
    ...(typeof by === 'string' ? { by } : {}),
    ...(typeof reason === 'string' ? { reason } : {}),
  };
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

/**
 * Sends a decision on a held tool call. The run must be waiting for a decision on that call, and an approval
 * must name the hash of the arguments it waits with: otherwise `INVALID_ARGUMENT`, and nothing is sent. The
 * idempotency key is the call's own, so the first decision on a call is the one that counts and a repeated
 * send (a double click, a retried webhook) acts once.
 */
export async function sendApprovalDecision(
  store: SnapshotStore,
  runId: string,
  decision: ApprovalDecision,
): Promise<SignalReceipt> {
  const loaded = await store.load(runId);
  if (loaded === undefined) throw new RunNotFoundError(runId);
  const waiting = pendingApprovals(loaded.run.wait?.detail).find(
    (pending) => pending.callId === decision.callId,
  );
  if (waiting === undefined) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `Run "${runId}" is not waiting for a decision on tool call "${decision.callId}".`,
      { data: { runId, callId: decision.callId, status: loaded.run.status } },
    );
  }
  if (decision.approved && decision.argsHash !== waiting.argsHash) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `The approval of tool call "${decision.callId}" names other arguments than the call waits with: ` +
        'read them again (`waitingFor`) before approving.',
      { data: { runId, callId: decision.callId, argsHash: waiting.argsHash } },
    );
  }
  const signal: NewSignal = {
    name: agentSignals.approval,
    payload: { ...decision } as unknown as JsonValue,
    idempotencyKey: `${agentSignals.approval}:${decision.callId}`,
  };
  return store.signal(runId, signal);
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
  ): Promise<SignalReceipt>;
  /** Rejects a held call: an agent's model reads the reason as the call's result; a planner replans. */
  reject(
    runId: string,
    callId: string,
    options?: { reason?: string; by?: string },
  ): Promise<SignalReceipt>;
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
    reject: (runId, callId, { reason, by } = {}) =>
      sendApprovalDecision(store(), checkRunId(runId), {
        callId,
        approved: false,
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
