import { context as otelContext, type Context, type Span } from '@opentelemetry/api';
import type { Clock } from '../clock.js';
import { isCairnError, serializeError, type CairnError } from '../errors.js';
import { jsonClone } from '../json.js';
import type { EffectOutcome } from '../store/contract.js';
import type { Attempt } from './attempt.js';
import { backoffDelay, type RunWriter } from './run-writer.js';
import type {
  ChildRunResult,
  DurableDefinition,
  EffectContext,
  PerformCommand,
  SettledEffect,
  StepResult,
} from './step-function.js';
import { recordError, type AttemptTracing } from './tracing.js';

/** Starts a child run under the current attempt's lease, its run span below `parent`. */
export type ChildLauncher = (
  definition: DurableDefinition<unknown, unknown, unknown>,
  input: unknown,
  childRunId: string,
  parent: Context,
) => Promise<ChildRunResult<unknown, unknown>>;

/**
 * Settles a batch of commanded effects against the journal: reuse what settled, answer `unknown` for a
 * non-idempotent effect found in flight, perform the rest; then hands the outcomes to the step function.
 */
export class EffectPerformer<State, Input, Output> {
  constructor(
    private readonly definition: DurableDefinition<State, Input, Output>,
    private readonly attempt: Attempt,
    private readonly writer: RunWriter,
    private readonly clock: Clock,
    private readonly tracing: AttemptTracing,
    private readonly launchChild: ChildLauncher,
  ) {}

  async settleAndStep(
    state: State,
    commands: readonly PerformCommand[],
  ): Promise<StepResult<State>> {
    const settled: SettledEffect[] = [];
    let now = 0;
    const toPerform: number[] = [];
    commands.forEach((command, index) => {
      const marks = this.writer.marksOf(command.id);
      if (marks.settled !== undefined) {
        settled[index] = { id: command.id, outcome: marks.settled.outcome };
        now = Math.max(now, marks.settled.at);
      } else if (marks.started !== undefined && !command.idempotent) {
        const entry = this.writer.recordSettled(command.id, { status: 'unknown' });
        this.tracing.reportUnknown(command);
        settled[index] = { id: command.id, outcome: entry.outcome };
        now = Math.max(now, entry.at);
      } else {
        toPerform.push(index);
      }
    });

    // Write-ahead: a non-idempotent effect is durably marked started before it runs.
    let mustFlush = false;
    for (const index of toPerform) {
      const command = commands[index]!;
      if (!command.idempotent) {
        this.writer.recordStarted(command.id);
        mustFlush = true;
      }
    }
    if (mustFlush) await this.writer.flush();

    const results = await Promise.allSettled(
      toPerform.map(async (index) => {
        const command = commands[index]!;
        const outcome = await this.perform(command, state);
        const entry = this.writer.recordSettled(command.id, outcome);
        if (!command.idempotent) await this.writer.flush();
        settled[index] = { id: command.id, outcome };
        now = Math.max(now, entry.at);
      }),
    );
    const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure !== undefined) {
      this.attempt.assertActive();
      throw failure.reason;
    }
    this.attempt.assertActive();
    return this.definition.step(state, { type: 'settled', now, effects: settled });
  }

  private async perform(command: PerformCommand, state: State): Promise<EffectOutcome> {
    const { span, context } = this.tracing.startEffect(command);
    try {
      const outcome = await this.performTries(command, state, span, context);
      if (outcome.status === 'ok') this.tracing.settled(span, command, outcome.value);
      else if (outcome.status === 'error') {
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
    const runChild = ((
      definition: DurableDefinition<unknown, unknown, unknown>,
      input: unknown,
      childRunId: string,
    ) => this.launchChild(definition, input, childRunId, context)) as EffectContext['runChild'];
    for (let try_ = 1; ; try_ += 1) {
      await this.attempt.pass({ point: 'effect.before', ...boundary });
      let outcome: EffectOutcome;
      try {
        const value = await otelContext.with(context, () =>
          this.definition.perform(command.effect, {
            runId: this.attempt.runId,
            state,
            effectId: command.id,
            epoch: this.attempt.epoch,
            signal: this.attempt.signal,
            clock: this.clock,
            attempt: try_,
            runChild,
          }),
        );
        outcome = { status: 'ok', value: jsonClone(value ?? null) };
      } catch (error) {
        this.attempt.assertActive();
        const retryable = isCairnError(error) && error.retryable;
        if (retryable && try_ < maxAttempts) {
          const delay = retryDelay(error, try_, command);
          span.addEvent('cairn.retry', {
            'cairn.attempt': try_,
            'cairn.retry.delay_ms': delay,
            'cairn.error.code': error.code,
          });
          await this.clock.sleep(delay, this.attempt.signal);
          continue;
        }
        outcome = { status: 'error', error: serializeError(error) };
      }
      await this.attempt.pass({ point: 'effect.after', ...boundary });
      return outcome;
    }
  }
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
