import type { Clock } from '../clock.js';
import { serializeError } from '../errors.js';
import type { JournalEntry } from '../store/contract.js';
import type { RunSignal } from '../store/waits.js';
import type { HistoryRecorder } from './history-recorder.js';
import type { SignalCursor } from './signal-cursor.js';
import type { DurableDefinition, PerformCommand, StepEvent, StepResult } from './step-function.js';
import type { AttemptTracing } from './tracing.js';

/**
 * An attempt's steps of its definition, and how mail reaches them. While no checkpoint of the attempt has recorded
 * what a step answered from the mailbox (a run woken from a wait, or mail a crashed holder never read), that
 * answer is a function of the stored state and the mail alone: more mail seen before the checkpoint lands makes
 * the step answer again from the stored state with all of it, and the checkpoint is written only if no mail came
 * meanwhile (`guard`). So a decision the store accepted before the checkpoint is never overtaken by one the step
 * made without it (an approval timeout), and signals take effect in mailbox order.
 */
export class Stepper<State, Input, Output> {
  private restart:
    | { state: State; signals: RunSignal[]; event(signals: RunSignal[], now: number): StepEvent }
    | undefined;

  constructor(
    private readonly definition: DurableDefinition<State, Input, Output>,
    private readonly clock: Clock,
    private readonly signals: SignalCursor,
    private readonly history: HistoryRecorder,
    private readonly tracing: AttemptTracing,
  ) {}

  /**
   * A step of the definition. A step that throws (a bug in the definition, or an input it cannot handle) ends
   * the run failed with what it threw: a step is deterministic, so trying the run again would only throw again
   * after running its effects again.
   */
  step(state: State, event: StepEvent): StepResult<State> {
    try {
      return this.definition.step(state, event);
    } catch (error) {
      return { state, commands: [{ type: 'fail', error: serializeError(error) }] };
    }
  }

  /**
   * The first step of an attempt that answers mail from the stored state: `event` makes the step's event from
   * the mail so far, and is made again (with more mail) until a checkpoint records the answer.
   */
  answerStored(
    state: State,
    mail: readonly RunSignal[],
    event: (signals: RunSignal[], now: number) => StepEvent,
  ): StepResult<State> {
    this.handOver(mail);
    this.restart = { state, signals: [...mail], event };
    return this.step(state, event(this.restart.signals, this.clock.now()));
  }

  /**
   * Hands mail seen at a boundary to the step: from `state` with the event `fresh` makes, or, while the
   * attempt's first answer to mail is not recorded yet, from the stored state with all the mail.
   */
  answer(
    state: State,
    mail: readonly RunSignal[],
    fresh: (now: number) => StepEvent,
  ): StepResult<State> {
    this.handOver(mail);
    this.tracing.signalsArrived(mail);
    const restart = this.restart;
    if (restart === undefined) return this.step(state, fresh(this.clock.now()));
    restart.signals = [...restart.signals, ...mail];
    return this.step(restart.state, restart.event(restart.signals, this.clock.now()));
  }

  /**
   * The step's answer to mail a crashed holder had not read, from the recovered checkpoint's state, when it may
   * take the place of the pending effects that checkpoint names (see `answersInPlaceOf`); else undefined, and the
   * pending effects run first.
   */
  answerInPlaceOf(
    state: State,
    pending: readonly PerformCommand[],
    journal: readonly JournalEntry[],
    mail: readonly RunSignal[],
  ): StepResult<State> | undefined {
    if (mail.length === 0) return undefined;
    const event = (all: RunSignal[], now: number): StepEvent => ({
      type: 'signals',
      now,
      signals: all,
    });
    if (!answersInPlaceOf(this.step(state, event([...mail], this.clock.now())), pending, journal))
      return undefined;
    this.tracing.signalsArrived(mail);
    return this.answerStored(state, mail, event);
  }

  /** What a checkpoint asks while an answer to mail is unrecorded: to be refused if mail came meanwhile. */
  get guard(): { unlessMail?: true } {
    return this.restart === undefined ? {} : { unlessMail: true };
  }

  /** A checkpoint of the attempt was written: what the step answered is recorded. */
  recorded(): void {
    this.restart = undefined;
  }

  private handOver(mail: readonly RunSignal[]): void {
    this.signals.handOver(mail);
    this.history.signals(mail.map((signal) => signal.name));
  }
}

/**
 * Whether `answer` (the step's answer to mail, from a recovered checkpoint's state) may replace the pending
 * effects that checkpoint names, as a live holder's answer at that boundary would have: it commands each of them
 * again (a trip's model call: the state did not count on them running), none of them settled, and none that may
 * have taken effect (started, not idempotent) would be dropped. An answer that leaves one out (an approved call
 * the state already counts as started) may not: the pending effects run first, and the mail waits for the next
 * boundary.
 */
export function answersInPlaceOf<State>(
  answer: StepResult<State>,
  pending: readonly PerformCommand[],
  journal: readonly JournalEntry[],
): boolean {
  const commanded = new Set(
    answer.commands.flatMap((command) => (command.type === 'perform' ? [command.id] : [])),
  );
  if (!pending.every((command) => commanded.has(command.id))) return false;
  const ids = new Map<string, PerformCommand>();
  for (const command of pending) {
    ids.set(command.id, command);
    if (command.formerId !== undefined) ids.set(command.formerId, command);
  }
  return journal.every((entry) => {
    const command = ids.get(entry.effectId);
    if (command === undefined) return true;
    return entry.type === 'started' && command.idempotent;
  });
}
