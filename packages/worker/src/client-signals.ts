import {
  agentSignals,
  checkRunId,
  RunNotFoundError,
  sendApprovalDecision,
  type ApprovalReceipt,
  type DurableStore,
  type JsonValue,
  type RunSignal,
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
  /**
   * The `argsHash` of the holding rejected; without it, the arguments the call waits with. A repeat sent once a
   * planner held the node again with other input then answers the first rejection.
   */
  argsHash?: string;
}

/** How a client talks to runs that are under way, or waiting. */
export interface SignalSender {
  /**
   * Puts a signal in a run's mailbox: a run waiting for that name wakes and a worker continues it. Throws
   * `RUN_NOT_FOUND`, `RUN_ENDED` for a run that ended, `INVALID_ARGUMENT` for a child run or a bad signal. A
   * `cairn.approval` signal is a decision, checked as `approve` and `reject` check theirs.
   */
  signal(
    runId: string,
    name: string,
    payload: JsonValue,
    options?: SignalOptions,
  ): Promise<SignalReceipt>;
  /**
   * Approves a call (an agent's tool call, a planner's node) a run waits on, checked by the store in the step that
   * keeps it: `INVALID_ARGUMENT` when the run does not wait for that call (not yet, or no more: it timed out, was
   * steered off) or `argsHash` names other arguments, and nothing is sent. The first decision on a call stands:
   * a repeat, at any time, answers it (`duplicate`, with the standing `decision`).
   */
  approve(runId: string, callId: string, options: ApproveOptions): Promise<ApprovalReceipt>;
  /** Rejects a call a run waits on (checked as `approve` is): it never runs, the model reads the reason. */
  reject(runId: string, callId: string, options?: RejectOptions): Promise<ApprovalReceipt>;
  /**
   * The signals in a run's mailbox that no checkpoint consumed yet, oldest first: those it has not read. For a run
   * that ended, what it never read: a message accepted while it failed or was cancelled is not acted on.
   * `RUN_NOT_FOUND` for an unknown run.
   */
  mailbox(runId: string): Promise<RunSignal[]>;
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
    async mailbox(runId) {
      const id = checkRunId(runId);
      const signals = await store.mailbox(id);
      if (signals.length === 0 && (await store.load(id)) === undefined)
        throw new RunNotFoundError(id);
      return signals;
    },
    approve: (runId, callId, { argsHash, by }) =>
      sendApprovalDecision(store, checkRunId(runId), {
        callId,
        approved: true,
        argsHash,
        ...(by === undefined ? {} : { by }),
      }),
    reject: (runId, callId, { reason, by, argsHash } = {}) =>
      sendApprovalDecision(store, checkRunId(runId), {
        callId,
        approved: false,
        ...(argsHash === undefined ? {} : { argsHash }),
        ...(reason === undefined ? {} : { reason }),
        ...(by === undefined ? {} : { by }),
      }),
    followUp: (runId, text, options) =>
      signal(runId, agentSignals.followUp, { content: text }, options),
    steer: (runId, text, options) => signal(runId, agentSignals.steer, { content: text }, options),
  };
}
