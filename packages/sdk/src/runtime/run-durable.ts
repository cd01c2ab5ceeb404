import type { Clock } from '../clock.js';
import {
  CairnError,
  deserializeError,
  isCairnError,
  LeaseHeldError,
  RunNotFoundError,
  RunSuspendedError,
  serializeError,
  type SerializedError,
} from '../errors.js';
import { jsonClone, type JsonValue } from '../json.js';
import type { DurableStore, EffectOutcome, Lease, RunRecord } from '../store/contract.js';
import { Attempt } from './attempt.js';
import { keepLease } from './lease-keeper.js';
import { backoffDelay, RunWriter, type StoreRetryPolicy } from './run-writer.js';
import { parseRuntimeSnapshot, type RuntimeSnapshot } from './runtime-snapshot.js';
import type {
  BoundaryHook,
  DurableDefinition,
  PerformCommand,
  SettledEffect,
  StepResult,
} from './step-function.js';

/** Everything one attempt at a run needs. */
export interface DurableRunOptions<Input> {
  store: DurableStore;
  runId: string;
  /** `execute` creates the run when it does not exist; `resume` requires it. */
  mode: 'execute' | 'resume';
  input?: Input;
  /** Proceed although the stored signature differs from the definition's. */
  force: boolean;
  clock: Clock;
  owner: string;
  leaseMs: number;
  storeRetry: StoreRetryPolicy;
  deleteOnComplete: boolean;
  onBoundary?: BoundaryHook;
  /** Aborting it cancels the run: in-flight effects see their signal abort, the run ends `cancelled`. */
  signal?: AbortSignal;
}

/** How a run ended, from the attempt that saw it end (or from the store, for a finished run). */
export interface DurableRunResult<State, Output> {
  runId: string;
  output: Output;
  state: State;
  /** The epoch this attempt held; null when the run had already completed and nothing was performed. */
  epoch: number | null;
  /** True when the run had checkpoints from an earlier attempt. */
  resumed: boolean;
}

/**
 * Runs a durable step function to its end from wherever its store says it is: the runtime loop of
 * DESIGN.md. Returns the output of a completed run and throws the typed error of a failed one.
 */
export async function runDurable<State, Input, Output>(
  definition: DurableDefinition<State, Input, Output>,
  options: DurableRunOptions<Input>,
): Promise<DurableRunResult<State, Output>> {
  const { store, runId } = options;
  let record = (await store.load(runId))?.run;
  if (record === undefined) {
    if (options.mode === 'resume') throw new RunNotFoundError(runId);
    record = (await createRun(definition, options)).run;
  }
  const finished = finishedResult(definition, record);
  if (finished !== undefined) return finished;
  checkDrift(definition, record, options.force);

  const lease = await store.acquire(runId, { owner: options.owner, ttlMs: options.leaseMs });
  if (lease === undefined) throw new LeaseHeldError(runId);
  return runUnderLease(definition, options, lease);
}

async function createRun<State, Input, Output>(
  definition: DurableDefinition<State, Input, Output>,
  options: DurableRunOptions<Input>,
) {
  const initial: RuntimeSnapshot<State> = {
    format: 1,
    state: definition.init(options.input as Input, options.runId),
    pending: null,
    journalSeq: 0,
  };
  return options.store.create({
    runId: options.runId,
    kind: definition.kind,
    name: definition.name,
    signature: definition.signature,
    snapshot: jsonClone(initial) as unknown as JsonValue,
  });
}

function checkDrift<State, Input, Output>(
  definition: DurableDefinition<State, Input, Output>,
  record: RunRecord,
  force: boolean,
): void {
  if (!force && record.signature !== definition.signature) {
    throw definition.driftError(record.runId, record.signature, definition.signature);
  }
}

/** The stored end of a finished run, which resuming returns (or throws) without performing anything. */
function finishedResult<State, Input, Output>(
  definition: DurableDefinition<State, Input, Output>,
  record: RunRecord,
): DurableRunResult<State, Output> | undefined {
  if (record.status === 'completed') {
    const snapshot = parseRuntimeSnapshot(record.runId, record.snapshot, (s) =>
      definition.parseState(s),
    );
    return {
      runId: record.runId,
      output: definition.parseOutput(record.output ?? null),
      state: snapshot.state,
      epoch: null,
      resumed: true,
    };
  }
  if (record.status === 'failed' || record.status === 'cancelled') {
    throw deserializeError(
      record.error ?? {
        name: 'CairnError',
        code: record.status === 'failed' ? 'RUN_FAILED' : 'RUN_CANCELLED',
        message: `Run "${record.runId}" ended ${record.status}.`,
        retryable: false,
      },
    );
  }
  return undefined;
}

async function runUnderLease<State, Input, Output>(
  definition: DurableDefinition<State, Input, Output>,
  options: DurableRunOptions<Input>,
  lease: Lease,
): Promise<DurableRunResult<State, Output>> {
  const { store, runId, clock } = options;
  const attempt = new Attempt(runId, lease.epoch, options.onBoundary);
  const keeper = keepLease({
    store,
    lease,
    ttlMs: options.leaseMs,
    clock,
    onLost: (error) => attempt.loseLease(error),
  });
  const onCancel = () => attempt.cancel(options.signal?.reason);
  if (options.signal?.aborted) onCancel();
  options.signal?.addEventListener('abort', onCancel, { once: true });
  let writer: RunWriter | undefined;

  try {
    // Reload under the lease: a previous holder may have written since the first look.
    const loaded = await store.load(runId);
    if (loaded === undefined) throw new RunNotFoundError(runId);
    const finished = finishedResult(definition, loaded.run);
    if (finished !== undefined) {
      await store.release(keeper.lease);
      return finished;
    }
    checkDrift(definition, loaded.run, options.force);
    const snapshot = parseRuntimeSnapshot(runId, loaded.run.snapshot, (s) =>
      definition.parseState(s),
    );
    const resumed = snapshot.pending !== null;
    writer = new RunWriter(
      store,
      attempt,
      clock,
      options.storeRetry,
      loaded.journal,
      snapshot.journalSeq,
    );
    if (loaded.run.status === 'suspended') await writer.updateStatus({ status: 'running' });

    const performer = new EffectPerformer(definition, attempt, writer, clock);
    let result: StepResult<State> =
      snapshot.pending === null
        ? definition.step(snapshot.state, { type: 'start', now: clock.now() })
        : await performer.settleAndStep(snapshot.state, snapshot.pending);

    for (;;) {
      const end = result.commands.find((c) => c.type === 'complete' || c.type === 'fail');
      const performs = result.commands.filter((c): c is PerformCommand => c.type === 'perform');
      const runtimeSnapshot = (pending: PerformCommand[]): JsonValue =>
        jsonClone({
          format: 1,
          state: result.state,
          pending,
          journalSeq: writer!.lastSeq,
        }) as unknown as JsonValue;

      if (end?.type === 'complete') {
        const output = jsonClone(end.output);
        await writer.checkpoint({
          status: 'completed',
          signature: definition.signature,
          snapshot: runtimeSnapshot([]),
          output,
        });
        await releaseQuietly(store, keeper.lease);
        if (options.deleteOnComplete) await store.delete(runId);
        return {
          runId,
          output: definition.parseOutput(output),
          state: result.state,
          epoch: lease.epoch,
          resumed,
        };
      }
      if (end?.type === 'fail') {
        await writer.checkpoint({
          status: 'failed',
          signature: definition.signature,
          snapshot: runtimeSnapshot([]),
          error: end.error,
        });
        await releaseQuietly(store, keeper.lease);
        throw deserializeError(end.error);
      }
      if (performs.length === 0) {
        throw new CairnError(
          'INVALID_ARGUMENT',
          `The ${definition.kind} "${definition.name}" step returned neither an effect nor an end.`,
        );
      }
      if (result.commands.some((c) => c.type === 'checkpoint')) {
        await writer.checkpoint({
          status: 'running',
          signature: definition.signature,
          snapshot: runtimeSnapshot(performs),
        });
      }
      result = await performer.settleAndStep(result.state, performs);
    }
  } catch (error) {
    await stopAfterError(error, attempt, writer, store, keeper.lease);
    throw error;
  } finally {
    keeper.stop();
    options.signal?.removeEventListener('abort', onCancel);
  }
}

/** What a stopping attempt may still write, depending on why it stops. */
async function stopAfterError(
  error: unknown,
  attempt: Attempt,
  writer: RunWriter | undefined,
  store: DurableStore,
  lease: Lease,
): Promise<void> {
  const stopped = attempt.stopped;
  // A crashed process writes nothing more, and a holder that lost its lease may not.
  if (stopped?.type === 'crashed' || stopped?.type === 'lease-lost') return;
  if (writer !== undefined) {
    const update =
      stopped?.type === 'cancelled'
        ? { status: 'cancelled' as const, error: serializeError(error) }
        : error instanceof RunSuspendedError
          ? { status: 'suspended' as const, error: serializeError(error) }
          : undefined;
    if (update !== undefined) {
      // The store may still be down; a run left `running` is recovered when its lease runs out.
      await store.updateStatus(attempt.runId, attempt.epoch, update).catch(() => undefined);
    }
  }
  await releaseQuietly(store, lease);
}

async function releaseQuietly(store: DurableStore, lease: Lease): Promise<void> {
  await store.release(lease).catch(() => undefined);
}

/**
 * Settles a batch of commanded effects against the journal: reuse what settled, answer `unknown` for a
 * non-idempotent effect found in flight, perform the rest; then hands the outcomes to the step function.
 */
class EffectPerformer<State, Input, Output> {
  constructor(
    private readonly definition: DurableDefinition<State, Input, Output>,
    private readonly attempt: Attempt,
    private readonly writer: RunWriter,
    private readonly clock: Clock,
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
    const maxAttempts = command.retry?.maxAttempts ?? 1;
    const boundary = {
      runId: this.attempt.runId,
      effectId: command.id,
      effectKind: command.effect.kind,
    };
    for (let try_ = 1; ; try_ += 1) {
      await this.attempt.pass({ point: 'effect.before', ...boundary });
      let outcome: EffectOutcome;
      try {
        const value = await this.definition.perform(command.effect, {
          runId: this.attempt.runId,
          state,
          effectId: command.id,
          epoch: this.attempt.epoch,
          signal: this.attempt.signal,
          clock: this.clock,
          attempt: try_,
        });
        outcome = { status: 'ok', value: jsonClone(value ?? null) };
      } catch (error) {
        this.attempt.assertActive();
        const retryable = isCairnError(error) && error.retryable;
        if (retryable && try_ < maxAttempts) {
          await this.clock.sleep(retryDelay(error, try_, command), this.attempt.signal);
          continue;
        }
        outcome = { status: 'error', error: serializeError(error) as SerializedError };
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
