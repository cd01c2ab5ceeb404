import {
  agentSignals,
  checkRunId,
  sendApprovalDecision,
  type DurableStore,
  type JsonValue,
  type SignalReceipt,
} from '@cairn/sdk';

/** Options of `signal`, `followUp` and `steer`. */
export interface SignalOptions {
  /** A second signal to the same run with this key is accepted once: a retried send acts once. */
  idempotencyKey?: string;
}

/** Options of `approve`. */
export interface ApproveOptions {
  /** The `argsHash` the run lists for the call (`waitingFor.approvals`): approving other arguments is refused. */
  argsHash: string;
  /** Who decided, for the record. */
  by?: string;
}

/** Options of `reject`. */
export interface RejectOptions {
  /** Why: the model reads it as the call's result. */
  reason?: string;
  by?: string;
}

/** How a client talks to runs that are under way, or waiting. */
export interface SignalSender {
  /**
   * Puts a signal in a run's mailbox: a run waiting for that name wakes and a worker continues it. Throws
   * `RUN_NOT_FOUND`, `RUN_ENDED` for a run that ended, `INVALID_ARGUMENT` for a child run or a bad signal.
   */
  signal(
    runId: string,
    name: string,
    payload: JsonValue,
    options?: SignalOptions,
  ): Promise<SignalReceipt>;
  /**
   * Approves a tool call an agent's run waits on; the first decision on a call counts, a repeat acts once.
   * `INVALID_ARGUMENT` when the run does not wait for that call or `argsHash` names other arguments.
   */
  approve(runId: string, callId: string, options: ApproveOptions): Promise<SignalReceipt>;
  /** Rejects a tool call an agent's run waits on: the call never runs, the model reads the reason. */
  reject(runId: string, callId: string, options?: RejectOptions): Promise<SignalReceipt>;
  /** A user message an agent adds to its conversation at its next trip boundary. */
  followUp(runId: string, text: string, options?: SignalOptions): Promise<SignalReceipt>;
  /**
   * A user message that interrupts an agent: it ends a wait (calls waiting for a decision are answered as not
   * approved, a sleep is cut short) and is read before the next model call.
   */
  steer(runId: string, text: string, options?: SignalOptions): Promise<SignalReceipt>;
}

/** The signal half of a client, over its store. */
export function signalSender(store: DurableStore): SignalSender {
  const signal: SignalSender['signal'] = (runId, name, payload, options = {}) =>
    store.signal(checkRunId(runId), {
      name,
      payload,
      ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }),
    });
  return {
    signal,
    approve: (runId, callId, { argsHash, by }) =>
      sendApprovalDecision(store, checkRunId(runId), {
        callId,
        approved: true,
        argsHash,
        ...(by === undefined ? {} : { by }),
      }),
    reject: (runId, callId, { reason, by } = {}) =>
      sendApprovalDecision(store, checkRunId(runId), {
        callId,
        approved: false,
        ...(reason === undefined ? {} : { reason }),
        ...(by === undefined ? {} : { by }),
      }),
    followUp: (runId, text, options) =>
      signal(runId, agentSignals.followUp, { content: text }, options),
    steer: (runId, text, options) => signal(runId, agentSignals.steer, { content: text }, options),
  };
}
