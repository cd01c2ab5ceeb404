import type { Clock } from '../clock.js';
import type { SnapshotStore } from '../store/contract.js';
import { checkRunWait, type RunSignal, type RunWait } from '../store/waits.js';
import { CairnError } from '../errors.js';
import { storableJson } from '../json.js';
import type { Attempt } from './attempt.js';
import { retryStoreCall, type StoreRetryPolicy } from './run-writer.js';
import type { StepEvent, WaitCommand } from './step-function.js';

/**
 * What an attempt handed its step function from the run's mailbox. A signal handed over is consumed only by
 * the next checkpoint the attempt writes (it names `signalsConsumed`), so a crash before that checkpoint hands
 * it over again, to a state that never saw it: each signal is acted on once in the run's stored history.
 */
export class SignalCursor {
  /** The highest mailbox seq handed to the step this attempt. */
  private delivered = 0;
  /** The highest seq a written checkpoint consumed. */
  private written = 0;

  constructor(
    private readonly store: SnapshotStore,
    private readonly attempt: Attempt,
    private readonly clock: Clock,
    private readonly retry: StoreRetryPolicy,
  ) {}

  /** The signals in the mailbox the step has not been handed yet, oldest first. */
  async unseen(): Promise<RunSignal[]> {
    const mailbox = await retryStoreCall(
      () => this.store.mailbox(this.attempt.runId),
      this.attempt,
      this.clock,
      this.retry,
    );
    return this.notHandedOver(mailbox);
  }

  /** The signals of `mailbox` the step has not been handed yet. */
  notHandedOver(mailbox: readonly RunSignal[]): RunSignal[] {
    return mailbox.filter((signal) => signal.seq > this.delivered);
  }

  /** Records that the step was handed these signals. */
  handOver(signals: readonly RunSignal[]): void {
    for (const { seq } of signals) this.delivered = Math.max(this.delivered, seq);
  }

  /** The step acted on signals no checkpoint has consumed yet: one must be written before any effect starts. */
  get unconsumed(): boolean {
    return this.delivered > this.written;
  }

  /** What a checkpoint names to consume what the step was handed. */
  consumption(): { signalsConsumed?: number } {
    return this.delivered === 0 ? {} : { signalsConsumed: this.delivered };
  }

  /** A checkpoint carrying `consumption()` was written. */
  consumed(): void {
    this.written = this.delivered;
  }
}

/** The event a step gets when its wait ends, with the signals it has not seen. */
export function wokenEvent(wait: RunWait, signals: readonly RunSignal[], now: number): StepEvent {
  const answered = signals.some((signal) => wait.signals.includes(signal.name));
  return { type: 'woken', now, signals, timedOut: !answered };
}

/**
 * The wait a step's wait command asks the store to keep; `INVALID_ARGUMENT` when the step may not wait here
 * (`problem`: effects still pending, a child run) or the wait is malformed.
 */
export function storedWait(
  definition: { kind: string; name: string },
  command: WaitCommand,
  problem: string | undefined,
): RunWait {
  if (problem !== undefined) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `The ${definition.kind} "${definition.name}" step returned a wait ${problem}.`,
    );
  }
  return checkRunWait(
    storableJson({
      until: command.until ?? null,
      signals: [...(command.signals ?? [])],
      ...(command.detail === undefined ? {} : { detail: command.detail }),
    }) as unknown as RunWait,
  );
}
