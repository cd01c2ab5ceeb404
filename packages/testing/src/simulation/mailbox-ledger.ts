import {
  agentSignals,
  parseApprovalDecision,
  pendingApprovals,
  type JsonValue,
  type NewSignal,
  type PendingApprovalView,
  type RunStatus,
  type SignalReceipt,
  type StoredRun,
} from '@cairn/sdk';

/** What a client saw of a run right before it sent signals: the decisions the store could still apply. */
export interface Observation {
  status: RunStatus | undefined;
  /** The calls the stored wait lists as undecided (a `waiting` run's `wait.detail.approvals`). */
  pending: PendingApprovalView[];
  /** The seqs in the mailbox no checkpoint consumed then. */
  unconsumed: Set<number>;
  /** The highest seq the schedule had seen accepted for this generation of the run before it looked. */
  known: number;
}

/** A signal the store accepted (not a duplicate), with what the client saw before sending it. */
export interface AcceptedSignal {
  seq: number;
  name: string;
  payload: JsonValue;
  idempotencyKey: string | null;
  /** On the schedule's clock, when the store answered. */
  at: number;
  /** Sent through the client's checked path (`sendApprovalDecision`), or raw (`store.signal`). */
  via: 'client' | 'raw';
  observed: Observation;
}

/**
 * Every signal the stores accepted, per generation of a run id, in mailbox order, as the receipts said:
 * what the decision checks compare the runs' final states and the tools' side effects with. It checks at once
 * what a receipt must say: a new signal takes a seq no signal of the run had, above every seq accepted before
 * it was sent; a duplicate names the seq of the first signal accepted with its idempotency key.
 */
export class MailboxLedger {
  private readonly accepted = new Map<string, AcceptedSignal[]>();

  constructor(private readonly violation: (text: string) => void) {}

  /** What a client's load of the run shows, for signals about to be sent to generation `generation`. */
  observe(runId: string, generation: number, loaded: StoredRun | undefined): Observation {
    const run = loaded?.run;
    return {
      status: run?.status,
      pending: run?.status === 'waiting' ? pendingApprovals(run.wait?.detail) : [],
      unconsumed: new Set((loaded?.signals ?? []).map((signal) => signal.seq)),
      known: Math.max(0, ...this.of(runId, generation).map((signal) => signal.seq)),
    };
  }

  /** A receipt the store gave for `signal`. */
  record(
    runId: string,
    generation: number,
    signal: NewSignal,
    receipt: SignalReceipt,
    context: { at: number; via: 'client' | 'raw'; observed: Observation },
  ): void {
    const key = `${runId}@${generation}`;
    const list = this.accepted.get(key) ?? [];
    this.accepted.set(key, list);
    const what = `${signal.name} to ${key}`;
    if (receipt.duplicate) {
      // The standing signal: the first with the key, or (a store that keeps one decision per call) the first
      // decision on the same call.
      const callId = decisionCallId(signal.name, signal.payload);
      const standing = list.filter(
        (s) =>
          (signal.idempotencyKey !== undefined && s.idempotencyKey === signal.idempotencyKey) ||
          (callId !== undefined && decisionCallId(s.name, s.payload) === callId),
      );
      if (!standing.some((s) => s.seq === receipt.seq)) {
        this.violation(
          `${what} was answered duplicate of seq ${receipt.seq}, which no accepted signal with its key ` +
            `${JSON.stringify(signal.idempotencyKey ?? null)} or on its call has`,
        );
      }
      return;
    }
    if (signal.idempotencyKey !== undefined) {
      const first = list.find((s) => s.idempotencyKey === signal.idempotencyKey);
      if (first !== undefined) {
        this.violation(
          `${what} was accepted as seq ${receipt.seq} though seq ${first.seq} had its key ${signal.idempotencyKey}`,
        );
      }
    }
    if (list.some((s) => s.seq === receipt.seq) || receipt.seq <= context.observed.known) {
      this.violation(`${what} was accepted as seq ${receipt.seq}, a place an earlier signal had`);
    }
    list.push({
      seq: receipt.seq,
      name: signal.name,
      payload: signal.payload,
      idempotencyKey: signal.idempotencyKey ?? null,
      ...context,
    });
    list.sort((a, b) => a.seq - b.seq);
  }

  /** The signals accepted for this generation of the run, in mailbox order. */
  of(runId: string, generation: number): readonly AcceptedSignal[] {
    return this.accepted.get(`${runId}@${generation}`) ?? [];
  }

  /** Every generation of every run that was sent something: `[runId, generation]`. */
  generations(): Array<[string, number]> {
    return [...this.accepted.keys()].map((key) => {
      const at = key.lastIndexOf('@');
      return [key.slice(0, at), Number(key.slice(at + 1))];
    });
  }
}

/** The call an approval signal decides, or undefined for any other signal. */
export function decisionCallId(name: string, payload: JsonValue): string | undefined {
  return name === agentSignals.approval ? parseApprovalDecision(payload)?.callId : undefined;
}
