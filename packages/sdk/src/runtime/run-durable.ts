import {
  context as otelContext,
  trace,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type { Clock } from '../clock.js';
import {
  CairnError,
  DriftError,
  LeaseHeldError,
  LeaseLostError,
  RunNotFoundError,
  RunSuspendedError,
  serializeError,
} from '../errors.js';
import type { DurableStore, Lease, RunRecord } from '../store/contract.js';
import { Attempt } from './attempt.js';
import { keepLease } from './lease-keeper.js';
import { checkDrift, finishedResult, runUnderLease, type Holding } from './run-loop.js';
import type { StoreRetryPolicy } from './run-writer.js';
import { initialRunSnapshot } from './runtime-snapshot.js';
import type { BoundaryHook, DurableDefinition } from './step-function.js';
import { linkToOrigin, recordError, type StoredTraceContext } from './tracing.js';

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
  tracer: Tracer;
  /** The span context the run span starts under. @defaultValue the active context */
  parentContext?: Context;
  onBoundary?: BoundaryHook;
  /** Aborting it cancels the run: in-flight effects see their signal abort, the run ends `cancelled`. */
  signal?: AbortSignal;
  /**
   * Aborting it hands the run over: it stops at its next boundary, keeps its checkpoint and releases its
   * lease at once so another worker can claim it (a worker shutting down).
   */
  handOverSignal?: AbortSignal;
  /** Lease renewal interval. @defaultValue leaseMs / 3 */
  heartbeatMs?: number;
  /** Claims from holders that never released it, past which the run is dead-lettered. @defaultValue no limit */
  maxRecoveries?: number;
  /** Also claim a run still leased to this owner (a restarted process). @defaultValue false */
  reclaimOwn?: boolean;
  /** The run's record as the caller just read it, which saves reading it again before the claim. */
  record?: RunRecord;
  /** Called once the run is claimed, with the lease and the record as it was claimed. */
  onClaim?(lease: Lease, record: RunRecord): void;
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

/** Claims the run for one attempt, once it is known to exist and not to have ended. */
type Claim = (
  span: Span,
  record: RunRecord,
) => Promise<{ attempt: Attempt; holding: Holding; stop(): void }>;

/**
 * Runs a durable step function to its end from wherever its store says it is: the runtime loop of
 * DESIGN.md. Returns the output of a completed run and throws the typed error of a failed one.
 */
export function runDurable<State, Input, Output>(
  definition: DurableDefinition<State, Input, Output>,
  options: DurableRunOptions<Input>,
): Promise<DurableRunResult<State, Output>> {
  const { store, runId } = options;
  return traceAttempt(definition, options, async (span, record) => {
    const lease = await store.acquire(runId, {
      owner: options.owner,
      ttlMs: options.leaseMs,
      ...(options.reclaimOwn === true ? { reclaimOwn: true } : {}),
    });
    if (lease === undefined) throw new LeaseHeldError(runId);
    const recoveries = lease.recoveries ?? 0;
    span.setAttribute('cairn.run.recoveries', recoveries);
    options.onClaim?.(lease, record);
    if (options.maxRecoveries !== undefined && recoveries > options.maxRecoveries) {
      await deadLetter(store, lease, recoveries, options.maxRecoveries);
    }
    const attempt = new Attempt(runId, lease.epoch, options.onBoundary);
    const cancelRequested = () => {
      span.addEvent('cairn.cancel_requested');
      attempt.cancel(new CairnError('RUN_CANCELLED', `Run "${runId}" was cancelled by a client.`));
    };
    const keeper = keepLease({
      store,
      lease,
      ttlMs: options.leaseMs,
      ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
      clock: options.clock,
      onLost: (error) => {
        span.addEvent('cairn.lease_lost', {
          'cairn.run.epoch': lease.epoch,
          'cairn.error.message': error.message,
        });
        attempt.loseLease(error);
      },
      onCancelRequested: cancelRequested,
    });
    if (lease.cancelRequested === true) cancelRequested();
    const onCancel = () => attempt.cancel(options.signal?.reason);
    const onHandOver = () => {
      span.addEvent('cairn.handed_over');
      attempt.handOver();
    };
    if (options.signal?.aborted) onCancel();
    if (options.handOverSignal?.aborted) onHandOver();
    options.signal?.addEventListener('abort', onCancel, { once: true });
    options.handOverSignal?.addEventListener('abort', onHandOver, { once: true });
    return {
      attempt,
      holding: { type: 'own', keeper },
      stop() {
        keeper.stop();
        options.signal?.removeEventListener('abort', onCancel);
        options.handOverSignal?.removeEventListener('abort', onHandOver);
      },
    };
  });
}

/**
 * Runs a child run under its parent's lease (see `EffectContext.runChild`): it is adopted at the
 * parent's epoch, has no heartbeat of its own, and stops when the parent's attempt stops.
 */
function runChildDurable<State, Input, Output>(
  definition: DurableDefinition<State, Input, Output>,
  options: DurableRunOptions<Input>,
  parent: Attempt,
  parentLease: () => Lease,
): Promise<DurableRunResult<State, Output>> {
  parent.assertActive();
  // The child's own writes are guarded by its attempt; creating and adopting it are guarded here, so a
  // parent that crashed or lost its lease while the child was starting writes nothing more.
  const inner = options.store;
  const store: DurableStore = {
    ...inner,
    create: (run) => {
      parent.assertActive();
      return inner.create(run);
    },
    adopt: (childRunId, lease) => {
      parent.assertActive();
      return inner.adopt(childRunId, lease);
    },
  };
  options = { ...options, store };
  return traceAttempt(definition, options, async () => {
    const lease = await options.store.adopt(options.runId, parentLease());
    if (lease === undefined) {
      const error = new LeaseLostError(
        parent.runId,
        parent.epoch,
        `a newer holder adopted child "${options.runId}"`,
      );
      parent.loseLease(error);
      throw error;
    }
    const attempt = new Attempt(options.runId, lease.epoch, options.onBoundary, parent);
    return { attempt, holding: { type: 'child', lease }, stop: () => undefined };
  });
}

/** One attempt inside its `cairn.run` span: find or create the run, short-circuit, check drift, claim, run. */
async function traceAttempt<State, Input, Output>(
  definition: DurableDefinition<State, Input, Output>,
  options: DurableRunOptions<Input>,
  claim: Claim,
): Promise<DurableRunResult<State, Output>> {
  // The record is read again under the lease before anything runs, so a caller's recent read will do here.
  const existing =
    options.record?.runId === options.runId
      ? options.record
      : (await options.store.load(options.runId))?.run;
  if (existing === undefined && options.mode === 'resume')
    throw new RunNotFoundError(options.runId);
  const origin = existing === undefined ? undefined : storedTrace(existing);
  const span = options.tracer.startSpan(
    'cairn.run',
    {
      attributes: {
        'cairn.run.id': options.runId,
        'cairn.run.kind': definition.kind,
        [`cairn.${definition.kind}.name`]: definition.name,
        'cairn.run.resumed': existing !== undefined,
        'cairn.worker.owner': options.owner,
      },
      links: linkToOrigin(origin),
    },
    options.parentContext ?? otelContext.active(),
  );
  try {
    const record = existing ?? (await createRun(definition, options, span));
    const finished = finishedResult(definition, record);
    if (finished !== undefined) {
      span.setAttributes({ 'cairn.run.outcome': 'completed', 'cairn.run.short_circuit': true });
      return finished;
    }
    checkDrift(definition, record, options.force);
    const { attempt, holding, stop } = await claim(span, record);
    span.setAttribute('cairn.run.epoch', attempt.epoch);
    try {
      const result = await runUnderLease(
        definition,
        options,
        attempt,
        holding,
        span,
        runChildDurable,
      );
      span.setAttribute('cairn.run.outcome', 'completed');
      return result;
    } catch (error) {
      span.setAttribute('cairn.run.outcome', outcomeOf(error, attempt));
      throw error;
    } finally {
      stop();
    }
  } catch (error) {
    if (error instanceof DriftError) {
      span.addEvent('cairn.drift', {
        'cairn.signature.stored': error.stored,
        'cairn.signature.current': error.current,
      });
    }
    if (error instanceof RunSuspendedError) span.addEvent('cairn.suspended');
    recordError(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/**
 * Ends a run whose holders kept dying: status `dead_lettered`, with the reason, keeping its checkpoint and
 * journal for inspection. Throws the error it stored.
 */
async function deadLetter(
  store: DurableStore,
  lease: Lease,
  recoveries: number,
  maxRecoveries: number,
): Promise<never> {
  const error = new CairnError(
    'RUN_DEAD_LETTERED',
    `Run "${lease.runId}" was dead-lettered: its holder died without releasing it ${recoveries} times ` +
      `(maxRecoveries ${maxRecoveries}). Its last checkpoint and journal are kept.`,
    { data: { runId: lease.runId, recoveries, maxRecoveries } },
  );
  try {
    await store.updateStatus(lease.runId, lease.epoch, {
      status: 'dead_lettered',
      error: serializeError(error),
    });
  } finally {
    await store.release(lease).catch(() => undefined);
  }
  throw error;
}

function outcomeOf(error: unknown, attempt: Attempt): string {
  const stopped = attempt.stopped?.type;
  if (stopped === 'crashed') return 'crashed';
  if (stopped === 'released') return 'handed_over';
  if (stopped === 'lease-lost' || error instanceof LeaseLostError) return 'lease_lost';
  if (stopped === 'cancelled') return 'cancelled';
  if (error instanceof RunSuspendedError) return 'suspended';
  return 'failed';
}

function storedTrace(record: RunRecord): StoredTraceContext | undefined {
  const snapshot = record.snapshot;
  if (snapshot === null || typeof snapshot !== 'object' || Array.isArray(snapshot))
    return undefined;
  const stored = snapshot.trace;
  if (stored === null || typeof stored !== 'object' || Array.isArray(stored)) return undefined;
  const { traceId, spanId } = stored;
  return typeof traceId === 'string' && typeof spanId === 'string'
    ? { traceId, spanId }
    : undefined;
}

async function createRun<State, Input, Output>(
  definition: DurableDefinition<State, Input, Output>,
  options: DurableRunOptions<Input>,
  span: Span,
): Promise<RunRecord> {
  const { traceId, spanId } = span.spanContext();
  const snapshot = initialRunSnapshot(
    definition,
    options.input as Input,
    options.runId,
    trace.isSpanContextValid(span.spanContext()) ? { traceId, spanId } : undefined,
  );
  const { run } = await options.store.create({
    runId: options.runId,
    kind: definition.kind,
    name: definition.name,
    signature: definition.signature,
    snapshot,
  });
  return run;
}
