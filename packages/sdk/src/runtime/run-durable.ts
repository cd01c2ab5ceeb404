import { context as otelContext, type Span } from '@opentelemetry/api';
import {
  CairnError,
  DriftError,
  LeaseHeldError,
  LeaseLostError,
  notAChildError,
  RunNotFoundError,
  RunSuspendedError,
  RunWaitingError,
} from '../errors.js';
import type { DurableStore, Lease, RunRecord } from '../store/contract.js';
import { isWaitDue, type RunSignal } from '../store/waits.js';
import { storableJson, type JsonValue } from '../json.js';
import { Attempt } from './attempt.js';
import { deadLetter, tooManyRecoveries } from './dead-letter.js';
import { keepLease, type LeaseKeeper } from './lease-keeper.js';
import { runUnderLease } from './run-loop.js';
import { checkDrift, finishedResult } from './stored-run-checks.js';
import { retryStoreCall } from './run-writer.js';
import type { DurableRunOptions, DurableRunResult, Holding } from './run-options.js';
import { initialRunSnapshot } from './runtime-snapshot.js';
import type { DurableDefinition } from './step-function.js';
import { linkToOrigin, recordError, traceOrigin, type StoredTraceContext } from './tracing.js';

export type { DurableRunOptions, DurableRunResult } from './run-options.js';

/**
 * Claims the run for one attempt, once it is known to exist and not to have ended; `undefined` when it
 * cannot be claimed now.
 */
type Claim = (
  span: Span,
  record: RunRecord,
) => Promise<{ attempt: Attempt; holding: Holding; stop(): void } | undefined>;

/**
 * Runs a durable step function to its end from wherever its store says it is: the runtime loop of
 * DESIGN.md. Returns the output of a completed run and throws the typed error of a failed one.
 */
export function runDurable<State, Input, Output>(
  definition: DurableDefinition<State, Input, Output>,
  options: DurableRunOptions<Input>,
): Promise<DurableRunResult<State, Output>> {
  const { store, runId, clock } = options;
  let handed = false;
  const attempted = traceAttempt(definition, options, async (span, record) => {
    handed = true;
    const sentAt = clock.now();
    const acquired =
      options.lease ??
      (await store.acquire(runId, {
        owner: options.owner,
        ttlMs: options.leaseMs,
        ...(options.reclaimOwn === true ? { reclaimOwn: true } : {}),
      }));
    if (acquired === undefined) return undefined;
    // The run as the claim read it goes to the loop; the lease the attempt writes under carries only itself.
    const { claimed, ...lease } = acquired;
    // From here on the claim is ours: whatever fails before the run loop takes over gives it back.
    try {
      const recoveries = lease.recoveries ?? 0;
      span.setAttribute('cairn.run.recoveries', recoveries);
      try {
        options.onClaim?.(lease, record);
      } catch {
        // An observer's failure is not the run's.
      }
      if (options.maxRecoveries !== undefined && recoveries > options.maxRecoveries) {
        await deadLetter(store, lease, tooManyRecoveries(runId, recoveries, options.maxRecoveries));
      }
    } catch (error) {
      await store.release(lease).catch(() => undefined);
      throw error;
    }
    // The heartbeat moves the lease's local deadline; the attempt reads it before every effect.
    const renewed: { keeper?: LeaseKeeper } = {};
    const attempt = new Attempt({
      fence: lease,
      deadline: () => renewed.keeper?.deadline ?? sentAt + options.leaseMs,
      hook: options.onBoundary,
    });
    const cancelRequested = () => {
      span.addEvent('cairn.cancel_requested');
      attempt.cancel(new CairnError('RUN_CANCELLED', `Run "${runId}" was cancelled by a client.`));
    };
    const keeper = keepLease({
      store,
      lease,
      ttlMs: options.leaseMs,
      ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
      clock,
      deadline: sentAt + options.leaseMs,
      onLost: (error) => {
        span.addEvent('cairn.lease_lost', {
          'cairn.run.epoch': lease.epoch,
          'cairn.error.message': error.message,
        });
        attempt.loseLease(error);
      },
      onCancelRequested: cancelRequested,
    });
    renewed.keeper = keeper;
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
      holding: claimed === undefined ? { type: 'own', keeper } : { type: 'own', keeper, claimed },
      stop() {
        keeper.stop();
        options.signal?.removeEventListener('abort', onCancel);
        options.handOverSignal?.removeEventListener('abort', onHandOver);
      },
    };
  });
  const given = options.lease;
  if (given === undefined) return attempted;
  // A lease the caller claimed and the attempt never took up (drift, a malformed snapshot) is given back.
  const giveBack = async () => {
    if (!handed) await store.release(given).catch(() => undefined);
  };
  return attempted.then(
    async (result) => {
      await giveBack();
      return result;
    },
    async (error: unknown) => {
      await giveBack();
      throw error;
    },
  );
}

/**
 * Runs a child run under its parent's lease (see `EffectContext.runChild`): it is created as the parent's
 * child, adopted at the parent's epoch, has no heartbeat of its own, and stops when the parent's attempt
 * stops. Its writes are fenced by its root's lease too.
 */
function runChildDurable<State, Input, Output>(
  definition: DurableDefinition<State, Input, Output>,
  options: DurableRunOptions<Input>,
  parent: Attempt,
  parentLease: () => Lease,
): Promise<DurableRunResult<State, Output>> {
  parent.assertActive();
  // The child's own writes are guarded by its attempt; reading, creating and adopting it are guarded here, so
  // a parent that crashed or lost its lease while the child was starting writes nothing more. They are tried
  // again like the parent's writes while the store cannot be reached (a failover): a store error is not the
  // node's outcome.
  const inner = options.store;
  const retried = <T>(call: () => Promise<T>) =>
    retryStoreCall(
      () => {
        parent.assertActive();
        return call();
      },
      parent,
      options.clock,
      options.storeRetry,
    );
  const store: DurableStore = {
    ...inner,
    load: (runId) => retried(() => inner.load(runId)),
    create: (run) => retried(() => inner.create(run)),
    adopt: (childRunId, lease) => retried(() => inner.adopt(childRunId, lease)),
  };
  const childOptions = { ...options, store };
  const parentFence = { runId: parent.runId, incarnation: parent.fence.incarnation };
  return traceAttempt(
    definition,
    childOptions,
    async () => {
      const lease = await store.adopt(options.runId, parentLease());
      if (lease === undefined) {
        const error = new LeaseLostError(
          parent.runId,
          parent.epoch,
          `a newer holder adopted child "${options.runId}"`,
        );
        parent.loseLease(error);
        throw error;
      }
      const attempt = new Attempt({
        fence: lease,
        deadline: () => parent.leaseDeadline,
        hook: options.onBoundary,
        parent,
      });
      const takenFrom = parentLease().takenFrom ?? null;
      return { attempt, holding: { type: 'child', lease, takenFrom }, stop: () => undefined };
    },
    parentFence,
  );
}

/**
 * One attempt inside its `cairn.run` span: find or create the run, short-circuit, check drift, claim, run.
 * A child run (`parent` given) is created as the parent's child.
 */
async function traceAttempt<State, Input, Output>(
  definition: DurableDefinition<State, Input, Output>,
  options: DurableRunOptions<Input>,
  claim: Claim,
  parent?: { runId: string; incarnation: string },
): Promise<DurableRunResult<State, Output>> {
  // The record is read again under the lease before anything runs, so a caller's recent read will do here.
  let existing = options.record?.runId === options.runId ? options.record : undefined;
  let mailbox: RunSignal[] | undefined;
  if (existing === undefined) {
    const loaded = await options.store.load(options.runId);
    existing = loaded?.run;
    mailbox = loaded?.signals;
  }
  if (parent !== undefined && existing !== undefined && !isChildOf(existing, parent)) {
    // A child left by an earlier incarnation of this parent is created afresh (which replaces it); a run
    // someone created under this id on its own is not this parent's to run.
    if (existing.parent?.runId !== parent.runId) throw notAChildError(options.runId, parent.runId);
    existing = undefined;
  }
  if (parent === undefined && existing !== undefined && existing.rootRunId !== null) {
    // A child run is its parent's: it runs, and ends, only under it. A caller choosing run ids must not read a
    // child's output or state, nor run it on its own, by naming its id.
    throw new CairnError(
      'INVALID_ARGUMENT',
      `Run "${options.runId}" is a child run of "${existing.rootRunId}": it runs only under that run.`,
      { data: { runId: options.runId, rootRunId: existing.rootRunId } },
    );
  }
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
        'cairn.worker.owner': options.owner,
      },
      links: linkToOrigin(origin),
    },
    options.parentContext ?? otelContext.active(),
  );
  try {
    const record = existing ?? (await createRun(definition, options, span, parent));
    // A run id belongs to the definition that created it: another one gets neither its end nor its state.
    if (record.kind !== definition.kind || record.name !== definition.name) {
      throw new CairnError(
        'INVALID_ARGUMENT',
        `Run "${options.runId}" is a run of ${record.kind} "${record.name}", not of ${definition.kind} "${definition.name}".`,
        { data: { runId: options.runId, kind: record.kind, name: record.name } },
      );
    }
    const finished = finishedResult(definition, record);
    if (finished !== undefined) {
      span.setAttributes({
        'cairn.run.outcome': 'completed',
        'cairn.run.short_circuit': true,
        'cairn.run.resumed': true,
      });
      return finished;
    }
    checkDrift(definition, record, options.force);
    // A waiting run that is not due is not claimed only to be given back: a process that died between the two
    // would leave it held by a dead owner (its wake-up late, a recovery counted) for nothing.
    if (parent === undefined && options.lease === undefined && record.status === 'waiting') {
      const unread = mailbox ?? (await options.store.mailbox(options.runId));
      const wait = record.wait;
      if (wait !== null && !record.cancelRequested && !isWaitDue(wait, unread, options.clock.now()))
        throw new RunWaitingError(options.runId, storableJson(wait) as unknown as JsonValue);
    }
    const claimed = await claim(span, record);
    if (claimed === undefined) {
      // Not claimable: it may have ended since it was read (a final status is never claimed).
      const now = (await options.store.load(options.runId))?.run;
      if (now === undefined) throw new RunNotFoundError(options.runId);
      const ended = finishedResult(definition, now);
      if (ended !== undefined) return ended;
      throw new LeaseHeldError(options.runId);
    }
    const { attempt, holding, stop } = claimed;
    // Resumed: an attempt before this one claimed the run (a root's first claim is epoch 1, whoever created
    // it: execute, or a client for a worker). A child shares its root's epoch: resumed when it existed.
    span.setAttributes({
      'cairn.run.epoch': attempt.epoch,
      'cairn.run.resumed': parent === undefined ? attempt.epoch > 1 : existing !== undefined,
    });
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
    // A wait is how the attempt ends, not an error.
    if (!(error instanceof RunWaitingError)) recordError(span, error);
    throw error;
  } finally {
    span.end();
  }
}

function outcomeOf(error: unknown, attempt: Attempt): string {
  const stopped = attempt.stopped?.type;
  if (stopped === 'crashed') return 'crashed';
  if (stopped === 'released') return 'handed_over';
  if (stopped === 'lease-lost' || error instanceof LeaseLostError) return 'lease_lost';
  if (stopped === 'cancelled') return 'cancelled';
  if (error instanceof RunSuspendedError) return 'suspended';
  if (error instanceof RunWaitingError) return 'waiting';
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
  parent: { runId: string; incarnation: string } | undefined,
): Promise<RunRecord> {
  const snapshot = initialRunSnapshot(
    definition,
    options.input as Input,
    options.runId,
    traceOrigin(span),
  );
  const { run } = await options.store.create({
    runId: options.runId,
    kind: definition.kind,
    name: definition.name,
    signature: definition.signature,
    snapshot,
    ...(parent === undefined ? {} : { parent }),
    ...(options.subject === undefined ? {} : { subject: options.subject }),
  });
  if (parent !== undefined && !isChildOf(run, parent))
    throw notAChildError(options.runId, parent.runId);
  return run;
}

function isChildOf(record: RunRecord, parent: { runId: string; incarnation: string }): boolean {
  return record.parent?.runId === parent.runId && record.parent.incarnation === parent.incarnation;
}
