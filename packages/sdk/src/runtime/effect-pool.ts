import { context as otelContext, type Context, type Span } from '@opentelemetry/api';
import type { Clock } from '../clock.js';
import {
  CairnError,
  isCairnError,
  RunSuspendedError,
  serializeError,
  snapshotInvalidError,
} from '../errors.js';
import { storableJson } from '../json.js';
import type { EffectOutcome, JournalEntry } from '../store/contract.js';
import type { Attempt } from './attempt.js';
import { boundedTry } from './bounded-try.js';
import { backoffDelay, type RunWriter, type StreamTail } from './run-writer.js';
import type {
  ChildRunResult,
  DurableDefinition,
  EffectContext,
  PerformCommand,
  StepEvent,
} from './step-function.js';
import type { HistoryRecorder } from './history-recorder.js';
import type { RunStream } from './run-stream.js';
import { recordError, type AttemptTracing } from './tracing.js';

/** Starts a child run under the current attempt's lease, its run span below `parent`. */
export type ChildLauncher = (
  definition: DurableDefinition<unknown, unknown, unknown>,
  input: unknown,
  childRunId: string,
  parent: Context,
) => Promise<ChildRunResult<unknown, unknown>>;

/** An effect whose outcome is known and not yet handed to the step function. */
interface Ready {
  command: PerformCommand;
  outcome: EffectOutcome;
  at: number;
  /** The journal seq of its settlement: outcomes reused after a crash are handed over in their order. */
  seq: number;
}

/**
 * The effects a run has commanded and its step function has not consumed yet. Each is settled against the
 * journal first (reused when it settled; answered `unknown` when a non-idempotent one was found in flight),
 * else performed: non-idempotent ones are durably marked started before they run. `next` hands outcomes to
 * the step function all at once (`batch`, agents: a trip's tool calls answer together) or one by one as they
 * settle (`each`, planners: a node that settles lets the next start while its siblings still run).
 */
export class EffectPool<State, Input, Output> {
  private readonly queued: PerformCommand[] = [];
  private readonly ready: Ready[] = [];
  private readonly running = new Set<string>();
  private failure: { error: unknown } | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly definition: DurableDefinition<State, Input, Output>,
    private readonly attempt: Attempt,
    private readonly writer: RunWriter,
    private readonly clock: Clock,
    private readonly tracing: AttemptTracing,
    private readonly history: HistoryRecorder,
    private readonly launchChild: ChildLauncher,
    private readonly stream?: RunStream,
  ) {}

  /** Commands whose outcomes the step function has not consumed: what a checkpoint keeps pending. */
  pending(): PerformCommand[] {
    return [...this.queued];
  }

  /**
   * Settles the commands against the journal and starts the rest; `state` is the state that commanded them.
   * Before anything starts, every mark still buffered is written: the outcomes the step just consumed (a
   * model response whose usage must be counted once) and the write-ahead marks of non-idempotent effects.
   * A hand-over, or a lease that ran out on the local clock, stops the attempt before any mark is written
   * for an effect that will not run.
   */
  async start(commands: readonly PerformCommand[], state: State): Promise<void> {
    // A value the journal holds for an effect commanded again (after a crash) is checked before it is used.
    for (const command of commands) {
      const settled = this.writer.marksOf(command.id).settled?.outcome;
      if (settled?.status !== 'ok') continue;
      const problem = this.definition.checkStoredEffect?.(
        command.effect,
        { value: settled.value },
        state,
      );
      if (problem !== undefined) {
        throw snapshotInvalidError(
          this.attempt.runId,
          `journaled effect "${command.id}" ${problem}`,
        );
      }
    }
    const toPerform: PerformCommand[] = [];
    for (const command of commands) {
      this.queued.push(command);
      const marks = this.writer.marksOf(command.id);
      if (marks.settled !== undefined) {
        const { outcome, at, seq } = marks.settled;
        this.history.effectSettled(command, outcome, at, marks.started?.at);
        this.ready.push({ command, outcome, at, seq });
      } else if (!command.idempotent && (marks.started ?? this.formerMark(command)) !== undefined) {
        const entry = this.writer.recordSettled(command.id, { status: 'unknown' });
        this.sayOutcome(command, entry.outcome);
        this.tracing.reportUnknown(command);
        this.history.effectSettled(command, entry.outcome, entry.at, marks.started?.at);
        this.ready.push({ command, outcome: entry.outcome, at: entry.at, seq: entry.seq });
      } else {
        toPerform.push(command);
      }
    }
    if (toPerform.length > 0) this.attempt.beforeEffect(this.clock.now());
    // Write-ahead: a non-idempotent effect is durably marked started before it runs.
    for (const command of toPerform) if (!command.idempotent) this.writer.recordStarted(command.id);
    await this.writer.flush();
    for (const command of toPerform) {
      this.running.add(command.id);
      void this.settle(command, state);
    }
  }

  /** How an effect settled, to the run's stream when it streams and the definition says something of it. */
  private sayOutcome(command: PerformCommand, outcome: EffectOutcome): void {
    if (this.stream === undefined) return;
    const part = this.definition.streamOutcome?.(command.effect, outcome);
    if (part !== undefined) this.stream.say(command.id, part);
  }

  /** Any mark journaled under the effect's former id (see `PerformCommand.formerId`). */
  private formerMark(command: PerformCommand): JournalEntry | undefined {
    if (command.formerId === undefined) return undefined;
    const former = this.writer.marksOf(command.formerId);
    return former.started ?? former.settled;
  }

  /** The next outcomes for the step function, as the definition steps: all at once, or one by one. */
  async next(): Promise<StepEvent & { type: 'settled' }> {
    const stepsEach = this.definition.stepping === 'each';
    // A failed attempt (a crash, a lost lease) lets what is still running end before it stops: each ends, or
    // is abandoned past its timeout or a short grace after its signal aborted (`boundedTry`).
    while (
      this.running.size > 0 &&
      (this.failure !== undefined || !stepsEach || this.ready.length === 0)
    ) {
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
    this.attempt.assertActive();
    if (this.failure !== undefined) throw this.failure.error;
    if (this.ready.length === 0) {
      // Nothing runs and nothing settled: the step would wait for an outcome that never comes.
      throw new CairnError(
        'INVALID_ARGUMENT',
        `Run "${this.attempt.runId}" waits for the outcome of an effect, but none is pending.`,
        { data: { runId: this.attempt.runId } },
      );
    }
    const handed = stepsEach
      ? [this.ready.reduce((first, ready) => (ready.seq < first.seq ? ready : first))]
      : this.queued.map((command) => this.ready.find((ready) => ready.command === command)!);
    for (const ready of handed) {
      this.ready.splice(this.ready.indexOf(ready), 1);
      this.queued.splice(this.queued.indexOf(ready.command), 1);
    }
    return {
      type: 'settled',
      now: Math.max(0, ...handed.map((ready) => ready.at)),
      effects: handed.map((ready) => ({ id: ready.command.id, outcome: ready.outcome })),
    };
  }

  /** Waits for everything still running to end, discarding outcomes: before a run ends with effects in flight. */
  async drain(): Promise<void> {
    while (this.running.size > 0) await new Promise<void>((resolve) => (this.wake = resolve));
  }

  private async settle(command: PerformCommand, state: State): Promise<void> {
    try {
      const outcome = await this.perform(command, state);
      this.sayOutcome(command, outcome);
      // What the call said is in the stream log no later than its outcome is journaled: a settled call is never
      // made again, so nothing else could complete its stream. On a store that takes them so, its last chunks
      // ride with the write that journals the outcome (one write less per model call); else they go first.
      const stream = this.stream;
      let tail: StreamTail | undefined;
      if (stream?.rides === true) {
        const chunks = await stream.takeTail();
        const last = chunks.at(-1)?.position ?? 0;
        tail = { chunks, landed: () => stream.landed(last) };
      } else if (stream !== undefined) await stream.flush();
      const entry = this.writer.recordSettled(command.id, outcome, tail);
      this.history.effectSettled(command, outcome, entry.at);
      // While others still run, a non-idempotent outcome is written at once. The last one to settle is
      // handed straight to the step: the checkpoint right after records it (one write less per trip), or
      // the next `start` writes it before anything else begins.
      if (!command.idempotent && this.running.size > 1) await this.writer.flush();
      this.ready.push({ command, outcome, at: entry.at, seq: entry.seq });
    } catch (error) {
      this.failure ??= { error };
    } finally {
      this.running.delete(command.id);
      const wake = this.wake;
      this.wake = undefined;
      wake?.();
    }
  }

  private async perform(command: PerformCommand, state: State): Promise<EffectOutcome> {
    this.history.effectStarted(command);
    const { span, context } = this.tracing.startEffect(command);
    try {
      const outcome = await this.performTries(command, state, span, context);
      if (outcome.status === 'ok') this.tracing.settled(span, command, outcome.value);
      else if (outcome.error !== undefined) {
        if (outcome.status === 'unknown') span.setAttribute('cairn.effect.outcome', 'unknown');
        span.setAttribute('cairn.error.code', outcome.error.code);
        span.recordException({ name: outcome.error.name, message: outcome.error.message });
        span.setStatus({ code: 2, message: outcome.error.message });
      }
      return outcome;
    } catch (error) {
      recordError(span, error);
      throw error;
    } finally {
      span.end();
    }
  }

  private async performTries(
    command: PerformCommand,
    state: State,
    span: Span,
    context: Context,
  ): Promise<EffectOutcome> {
    const maxAttempts = command.retry?.maxAttempts ?? 1;
    const boundary = {
      runId: this.attempt.runId,
      effectId: command.id,
      effectKind: command.effect.kind,
    };
    // A try that started a child run is not abandoned: the child stops with this attempt on its own.
    let ranChild = false;
    const runChild = ((
      definition: DurableDefinition<unknown, unknown, unknown>,
      input: unknown,
      childRunId: string,
    ) => {
      ranChild = true;
      return this.launchChild(definition, input, childRunId, context);
    }) as EffectContext['runChild'];
    for (let try_ = 1; ; try_ += 1) {
      // A retry is a new start: not past the lease's local deadline. A hand-over lets it go on: in flight.
      if (try_ > 1) this.attempt.checkLeaseTime(this.clock.now());
      await this.attempt.pass({ point: 'effect.before', ...boundary });
      let timedOut: CairnError | undefined;
      let outcome: EffectOutcome;
      const sink =
        this.definition.streams?.(command.effect) === true
          ? this.stream?.open(command.id, try_)
          : undefined;
      try {
        const value = await boundedTry(
          (signal) =>
            otelContext.with(context, () =>
              this.definition.perform(command.effect, {
                runId: this.attempt.runId,
                state,
                effectId: command.id,
                epoch: this.attempt.epoch,
                signal,
                clock: this.clock,
                attempt: try_,
                runChild,
                ...(sink === undefined ? {} : { stream: sink.write }),
              }),
            ),
          {
            clock: this.clock,
            stop: this.attempt.signal,
            timeoutMs: command.timeoutMs,
            timeout: () => (timedOut = timeoutError(command)),
            abandonable: () => !ranChild,
          },
        );
        outcome = { status: 'ok', value: storableJson(value ?? null) };
      } catch (error) {
        if (this.attempt.isStopError(error)) {
          // The effect ended because the attempt stopped (or its child run was handed over): not an outcome.
          this.attempt.stopForHandOver();
          this.attempt.assertActive();
        }
        // A child run the store could not start or keep writing suspends this run too: not the node's outcome.
        if (ranChild && error instanceof RunSuspendedError) throw error;
        const retryable = isCairnError(error) && error.retryable;
        if (retryable && try_ < maxAttempts) {
          const delay = retryDelay(error, try_, command);
          span.addEvent('cairn.retry', {
            'cairn.attempt': try_,
            'cairn.retry.delay_ms': delay,
            'cairn.error.code': error.code,
          });
          await this.attempt.sleep(this.clock, delay);
          continue;
        }
        const failure = storableJson(serializeError(error));
        // Abandoned past its timeout, a non-idempotent effect may or may not have taken effect: unknown, as
        // when a crash leaves it in flight, and never tried again.
        outcome =
          timedOut !== undefined && error === timedOut && !command.idempotent
            ? { status: 'unknown', error: failure }
            : { status: 'error', error: failure };
      } finally {
        // An abandoned try may go on calling its sink: nothing it says after its end is kept.
        sink?.close();
      }
      await this.attempt.pass({ point: 'effect.after', ...boundary });
      return outcome;
    }
  }
}

/** What a try run past its effect's timeout is abandoned with: retryable when the effect is idempotent. */
function timeoutError(command: PerformCommand): CairnError {
  return new CairnError(
    'TOOL_TIMEOUT',
    `This call did not finish within its ${command.timeoutMs} ms timeout and was abandoned.`,
    {
      retryable: command.idempotent,
      data: { effectId: command.id, timeoutMs: command.timeoutMs ?? null },
    },
  );
}

/** Backoff for an effect, or the wait the error asks for (a provider's retry-after). */
function retryDelay(error: CairnError, try_: number, command: PerformCommand): number {
  const asked = error.data.retryAfterMs;
  if (typeof asked === 'number' && asked >= 0) return asked;
  return backoffDelay(
    try_,
    command.retry?.initialDelayMs ?? 200,
    command.retry?.maxDelayMs ?? 10_000,
  );
}
