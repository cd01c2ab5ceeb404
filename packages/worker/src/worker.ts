import { setMaxListeners } from 'node:events';
import type { TracerProvider } from '@opentelemetry/api';
import {
  CairnError,
  cairnTracer,
  defaultStoreRetry,
  DriftError,
  isCairnError,
  LeaseHeldError,
  LeaseLostError,
  runDurable,
  RunWaitingError,
  systemClock,
  type BoundaryHook,
  type Clock,
  type DurableStore,
  type Lease,
  type RunRecord,
  type RunWait,
  type StoreRetryPolicy,
  type StreamOptions,
  checkStreamOptions,
  checkStreamStore,
} from '@cairn/sdk';
import { delayBeforeNextPass, readNextWake } from './claim-timer.js';
import { DefinitionRegistry, type Runnable } from './definitions.js';
import type { WorkerEvent } from './events.js';
import { defaultOwner } from './owner.js';
import { Wake } from './wake.js';

/** Options of `createWorker`. */
export interface WorkerOptions {
  store: DurableStore;
  agents?: readonly Runnable[];
  planners?: readonly Runnable[];
  /** Other durable definitions, by kind and name. */
  definitions?: readonly Runnable[];
  /** Runs performed at once. @defaultValue 10 */
  concurrency?: number;
  /**
   * Lease length; a crashed worker's runs are free once it runs out (at once on Postgres). Claims take this;
   * a run's renewals take it too, else its definition's `durable.leaseMs`. @defaultValue 30000
   */
  leaseMs?: number;
  /** Renewal interval, at most a third of the lease. @defaultValue leaseMs / 3 */
  heartbeatMs?: number;
  /** This process's lease owner. @defaultValue host, pid and a random suffix */
  owner?: string;
  /**
   * On start, take back at once the runs still leased to `owner`: a restarted process recovering what it
   * held. Only safe when `owner` names one live process: two live workers sharing an owner would both run
   * the same runs. @defaultValue false
   */
  takeoverOnRestart?: boolean;
  /** Claims from holders that died holding a run, past which it is dead-lettered. @defaultValue 5 */
  maxRecoveries?: number;
  /**
   * Attempts in a row that end in an error before the run can go on (a store that keeps refusing its checkpoint,
   * an error the runtime cannot get past), at which it is dead-lettered with the last error. @defaultValue 5
   */
  maxStalls?: number;
  /** Fallback poll for new work when the store cannot notify, or misses a notification. @defaultValue 1000 */
  pollMs?: number;
  /** Signals that start a graceful shutdown; a second one exits at once. Empty to handle none. @defaultValue SIGTERM, SIGINT */
  shutdownSignals?: readonly NodeJS.Signals[];
  clock?: Clock;
  /** Spans of every run; a definition's own `tracerProvider` is used where this is not set. */
  tracerProvider?: TracerProvider;
  /** How store writes are retried; each field not set here is the definition's `durable.storeRetry`'s. */
  storeRetry?: Partial<StoreRetryPolicy>;
  /** Model calls stream to each run's stream log; unset: the definition's `durable.stream`. */
  stream?: boolean | StreamOptions;
  onEvent?(event: WorkerEvent): void;
  /** Called at every crash boundary of every run (for crash-injection tests and timelines). */
  onBoundary?: BoundaryHook;
}

/** A long-lived worker: `start()` it, `close()` it (or `await using` it). */
export interface Worker extends AsyncDisposable {
  readonly owner: string;
  start(): Promise<void>;
  /**
   * Stops claiming, hands running runs over at their next boundary, and resolves once they have. A tool call in
   * flight finishes first, or is abandoned at its `timeoutMs` as `defineTool` says (outcome unknown when the
   * tool is not idempotent).
   */
  close(): Promise<void>;
  /** Ids of the runs this worker is performing now. */
  active(): string[];
}

/** Creates a worker that claims runs from the store and performs them through the sdk runtime. */
export function createWorker(options: WorkerOptions): Worker {
  const registry = new DefinitionRegistry([
    ...(options.agents ?? []),
    ...(options.planners ?? []),
    ...(options.definitions ?? []),
  ]);
  const { store } = options;
  checkStreamOptions(options.stream);
  // The worker's setting wins; a definition that streams on a worker that says nothing would stream.
  for (const definition of [
    ...(options.agents ?? []),
    ...(options.planners ?? []),
    ...(options.definitions ?? []),
  ]) {
    checkStreamStore(
      store,
      options.stream ?? definition.durable?.stream,
      `The worker's "${definition.name}"`,
    );
  }
  checkStreamStore(store, options.stream, 'The worker');
  const clock = options.clock ?? systemClock;
  const owner = options.owner ?? defaultOwner();
  const concurrency = options.concurrency ?? 10;
  const leaseMs = options.leaseMs ?? 30_000;
  const pollMs = options.pollMs ?? 1_000;
  const emit = (event: WorkerEvent) => {
    try {
      options.onEvent?.(event);
    } catch {
      // An observer's failure is not the worker's, nor any run's.
    }
  };
  const wake = new Wake(clock);
  const active = new Map<string, Promise<void>>();
  /** Runs this worker will not try again before a time: drifted, unknown, failing to load. */
  const parked = new Map<string, number>();
  const handOver = new AbortController();
  // Every run in flight listens on this one signal; past Node's default of 10 listeners that is not a leak.
  setMaxListeners(0, handOver.signal);
  let state: 'new' | 'running' | 'closing' | 'closed' = 'new';
  let loop: Promise<void> | undefined;
  let unsubscribe: (() => Promise<void>) | undefined;
  let closing: Promise<void> | undefined;
  const signalHandlers = new Map<NodeJS.Signals, () => void>();

  const park = (runId: string, ms: number) => parked.set(runId, clock.now() + ms);
  /** Runs found unreadable (SNAPSHOT_INVALID, PAYLOAD_UNREADABLE), with how long they were last parked for. */
  const unreadable = new Map<string, number>();

  /** Performs one run: claimed here (run by run), or already claimed by a batch claim (`lease`). */
  async function perform(runId: string, lease?: Lease): Promise<void> {
    let record: RunRecord | undefined;
    try {
      record = lease?.claimed?.run ?? (await store.load(runId))?.run;
    } catch (error) {
      // A run claimed in a batch that cannot be read (SNAPSHOT_INVALID) is given back, never held.
      if (lease !== undefined) await store.release(lease).catch(() => undefined);
      throw error;
    }
    if (record === undefined) {
      if (lease !== undefined) await store.release(lease).catch(() => undefined);
      return;
    }
    const runnable = registry.get(record.kind, record.name);
    if (runnable === undefined) {
      park(runId, 60_000);
      if (lease !== undefined) await store.release(lease).catch(() => undefined);
      emit({
        type: 'skipped',
        runId,
        code: 'INVALID_ARGUMENT',
        message: `no ${record.kind} named "${record.name}" here`,
      });
      return;
    }
    try {
      const result = await runDurable(runnable.definition, {
        store,
        runId,
        record,
        ...(lease === undefined ? {} : { lease }),
        mode: 'resume',
        force: false,
        clock,
        owner,
        // The worker's settings win; what it leaves unset comes from the definition (README: "Workers and
        // definitions"). The owner, store and clock are always the worker's.
        leaseMs: options.leaseMs ?? runnable.durable?.leaseMs ?? leaseMs,
        storeRetry: {
          ...defaultStoreRetry,
          ...runnable.durable?.storeRetry,
          ...options.storeRetry,
        },
        deleteOnComplete: runnable.durable?.deleteOnComplete ?? false,
        stream: options.stream ?? runnable.durable?.stream ?? false,
        tracer: cairnTracer(options.tracerProvider ?? runnable.tracerProvider),
        handOverSignal: handOver.signal,
        maxRecoveries: options.maxRecoveries ?? 5,
        ...(options.maxStalls === undefined ? {} : { maxStalls: options.maxStalls }),
        reclaimOwn: options.takeoverOnRestart === true,
        ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
        ...(options.onBoundary === undefined ? {} : { onBoundary: options.onBoundary }),
        onClaim: (claimedLease, claimed) =>
          emit({
            type: 'claimed',
            runId,
            kind: claimed.kind,
            name: claimed.name,
            epoch: claimedLease.epoch,
            status: claimed.status,
            takenFrom:
              claimedLease.takenFrom !== undefined
                ? claimedLease.takenFrom
                : claimed.owner !== null && (claimedLease.recoveries ?? 0) > claimed.recoveries
                  ? claimed.owner
                  : null,
            recoveries: claimedLease.recoveries ?? 0,
          }),
      });
      unreadable.delete(runId);
      // A run that had already ended when it was looked at was performed by nobody here.
      if (result.epoch !== null) emit({ type: 'completed', runId });
    } catch (error) {
      await report(runId, error);
    }
  }

  async function report(runId: string, error: unknown): Promise<void> {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof RunWaitingError) {
      // The attempt ended as it should: the wait is stored and the lease given back. Not parked: a signal or
      // its time makes the run claimable again, and this worker may be the one to claim it.
      const wait = error.wait as unknown as RunWait;
      emit({ type: 'waiting', runId, until: wait.until, signals: [...wait.signals] });
    } else if (error instanceof LeaseHeldError) {
      emit({ type: 'skipped', runId, code: error.code, message });
    } else if (error instanceof LeaseLostError) {
      emit({ type: 'lease_lost', runId, message });
    } else if (error instanceof DriftError) {
      park(runId, 60_000);
      emit({ type: 'skipped', runId, code: error.code, message });
    } else if (isCairnError(error) && error.code === 'RUN_RELEASED') {
      emit({ type: 'handed_over', runId });
    } else if (isCairnError(error) && error.code === 'RUN_CANCELLED') {
      emit({ type: 'cancelled', runId });
    } else if (isCairnError(error) && error.code === 'RUN_SUSPENDED') {
      park(runId, 5_000);
      emit({ type: 'suspended', runId, message });
    } else if (isCairnError(error) && error.code === 'RUN_DEAD_LETTERED') {
      emit({ type: 'dead_lettered', runId, message });
    } else if (
      isCairnError(error) &&
      (error.code === 'SNAPSHOT_INVALID' || error.code === 'PAYLOAD_UNREADABLE')
    ) {
      // Rows changed behind the store's back (or payloads this worker has no codec or key for) stay so until
      // someone mends them: said once, then looked at again less and less often (1 min, doubling, up to an
      // hour), never claimed in a loop.
      const parkedFor = unreadable.get(runId);
      const next = parkedFor === undefined ? 60_000 : Math.min(parkedFor * 2, 3_600_000);
      unreadable.set(runId, next);
      park(runId, next);
      if (parkedFor === undefined) emit({ type: 'skipped', runId, code: error.code, message });
    } else if (isCairnError(error) && error.code === 'STORE_UNAVAILABLE') {
      park(runId, 1_000);
      emit({ type: 'skipped', runId, code: error.code, message });
    } else {
      const code = isCairnError(error) ? error.code : 'UNKNOWN';
      // `failed` names a run that ended failed. Anything else (a refusal a retry would not fix, such as a
      // transaction pooler's) left the run as it was: it is parked, not tried again at once, and said skipped.
      const status = (await store.load(runId).catch(() => undefined))?.run.status;
      if (status === 'failed') {
        emit({ type: 'failed', runId, code, message });
      } else {
        park(runId, 30_000);
        emit({ type: 'skipped', runId, code, message });
      }
    }
  }

  function launch(runId: string, lease?: Lease): void {
    const running = perform(runId, lease)
      .catch((error: unknown) => report(runId, error))
      .catch(() => undefined)
      .finally(() => {
        active.delete(runId);
        wake.notify();
      });
    active.set(runId, running);
  }

  async function claimLoop(): Promise<void> {
    let failures = 0;
    while (state === 'running') {
      const free = concurrency - active.size;
      const passStart = clock.now();
      let nextWake: number | null = null;
      if (free > 0) {
        try {
          const now = passStart;
          for (const [runId, until] of parked) if (until <= now) parked.delete(runId);
          if (store.claim !== undefined) {
            // One statement claims a batch: workers claiming at once take different runs, none waits.
            const leases = await store.claim({
              owner,
              ttlMs: leaseMs,
              limit: free,
              definitions: registry.keys,
              skip: [...parked.keys(), ...active.keys()],
              // Wait times are written on this worker's clock, so they are decided on it too.
              now,
              ...(options.takeoverOnRestart === true ? { reclaimOwner: owner } : {}),
            });
            for (const lease of leases) {
              // Claimed as the worker began to close: given back at once.
              if (state === 'running') launch(lease.runId, lease);
              else await store.release(lease).catch(() => undefined);
            }
          } else {
            const candidates = await store.claimable({
              limit: free + parked.size + active.size,
              definitions: registry.keys,
              now,
              ...(options.takeoverOnRestart === true ? { reclaimOwner: owner } : {}),
            });
            for (const runId of candidates) {
              if (state !== 'running' || active.size >= concurrency) break;
              if (!active.has(runId) && !parked.has(runId)) launch(runId);
            }
          }
          failures = 0;
          // With every slot taken there is nothing to claim at a wake-up: a freed slot wakes the loop.
          if (active.size < concurrency)
            nextWake = await readNextWake(store, registry.keys, passStart);
        } catch (error) {
          failures += 1;
          emit({
            type: 'error',
            code: isCairnError(error) ? error.code : 'UNKNOWN',
            message: error instanceof Error ? error.message : String(error),
          });
          await clock.sleep(Math.min(pollMs * 2 ** failures, 30_000));
          continue;
        }
      }
      if (state !== 'running') break;
      await wake.wait(delayBeforeNextPass(pollMs, nextWake, passStart, clock.now()));
    }
  }

  function installSignals(): void {
    for (const signal of options.shutdownSignals ?? (['SIGTERM', 'SIGINT'] as const)) {
      const handler = () => {
        if (state === 'closing' || state === 'closed') {
          // A second signal: leave now; leases run out or are taken over from the dead session.
          process.exit(130);
        }
        emit({ type: 'closing', signal });
        void close();
      };
      signalHandlers.set(signal, handler);
      process.on(signal, handler);
    }
  }

  async function close(): Promise<void> {
    if (closing !== undefined) return closing;
    if (state === 'new') {
      state = 'closed';
      return;
    }
    closing = (async () => {
      state = 'closing';
      handOver.abort();
      wake.notify();
      await loop;
      await Promise.allSettled([...active.values()]);
      await unsubscribe?.().catch(() => undefined);
      for (const [signal, handler] of signalHandlers) process.off(signal, handler);
      state = 'closed';
      emit({ type: 'closed' });
    })();
    return closing;
  }

  return {
    owner,
    async start() {
      if (state !== 'new')
        throw new CairnError('INVALID_ARGUMENT', 'A worker can be started once.');
      state = 'running';
      try {
        await store.prepare?.();
      } catch (error) {
        // What can never work (a pooler the store refuses, a schema it cannot use) fails start(), not every poll.
        if (!(isCairnError(error) && error.retryable)) {
          state = 'closed';
          throw error;
        }
        emit({ type: 'error', code: error.code, message: String(error) });
      }
      try {
        unsubscribe = await store.subscribe?.(() => wake.notify());
      } catch (error) {
        // No notifications: the poll still finds work.
        emit({
          type: 'error',
          code: isCairnError(error) ? error.code : 'UNKNOWN',
          message: String(error),
        });
      }
      installSignals();
      emit({ type: 'started', owner });
      loop = claimLoop();
    },
    close,
    active: () => [...active.keys()],
    [Symbol.asyncDispose]: close,
  };
}
