import type { TracerProvider } from '@opentelemetry/api';
import { systemClock, type Clock } from '../clock.js';
import { CairnError } from '../errors.js';
import { checkNewRunId, checkRunId, checkSubject } from '../run-id.js';
import { memoryStore } from '../store/memory-store.js';
import type { DurableStore } from '../store/contract.js';
import { runDurable, type DurableRunResult } from './run-durable.js';
import { defaultStoreRetry, type StoreRetryPolicy } from './run-writer.js';
import { checkStreamOptions, checkStreamStore, type StreamOptions } from './stream-options.js';
import type { BoundaryHook, DurableDefinition } from './step-function.js';
import { cairnTracer } from './tracing.js';

/** Where and how a definition's runs are kept. Without it, runs live in memory for one call only. */
export interface DurableOptions {
  store: DurableStore;
  /** Delete a run's record once it completes. @defaultValue false */
  deleteOnComplete?: boolean;
  /** Lease length; renewed every third of it. @defaultValue 30000 */
  leaseMs?: number;
  /** The lease owner this process claims runs as. @defaultValue a random id per definition */
  owner?: string;
  /** The clock for heartbeats and backoff. @defaultValue systemClock */
  clock?: Clock;
  /** How store writes are retried before the run is suspended. */
  storeRetry?: Partial<StoreRetryPolicy>;
  /**
   * Model calls stream what they say, as they say it, to the run's stream log (`client.stream` reads it), when
   * the store keeps streams: `true`, or how deltas are coalesced. A model without `stream` is streamed its
   * whole answer at once. What a run journals is the same either way. @defaultValue false
   */
  stream?: boolean | StreamOptions;
}

/** Options of `execute`. */
export interface ExecuteOptions {
  /** The run's id; executing an existing id continues that run. @defaultValue a random UUID */
  runId?: string;
  /** Aborting it cancels the run. */
  signal?: AbortSignal;
  /** Called at every crash boundary; throwing from it stops the attempt as a crash would. */
  onBoundary?: BoundaryHook;
  /** Whose data the run holds (a user or tenant id): see `NewRun.subject`. */
  subject?: string;
}

/** Options of `resume`. */
export interface ResumeOptions {
  /** Continue although the definition's signature changed since the last checkpoint. @defaultValue false */
  force?: boolean;
  signal?: AbortSignal;
  onBoundary?: BoundaryHook;
}

/** `execute` and `resume` for one definition. */
export interface Runner<State, Input, Output> {
  execute(input: Input, options?: ExecuteOptions): Promise<DurableRunResult<State, Output>>;
  resume(runId: string, options?: ResumeOptions): Promise<DurableRunResult<State, Output>>;
}

/** Binds a definition to its durable options and tracer provider. */
export function createRunner<State, Input, Output>(
  definition: DurableDefinition<State, Input, Output>,
  durable: DurableOptions | undefined,
  tracerProvider?: TracerProvider,
): Runner<State, Input, Output> {
  checkStreamOptions(durable?.stream);
  const owner = durable?.owner ?? `${definition.kind}:${definition.name}:${crypto.randomUUID()}`;
  const common = (store: DurableStore) => {
    checkStreamStore(store, durable?.stream, `Agent or planner "${definition.name}"`);
    return commonOf(store);
  };
  const commonOf = (store: DurableStore) => ({
    store,
    clock: durable?.clock ?? systemClock,
    owner,
    leaseMs: durable?.leaseMs ?? 30_000,
    storeRetry: { ...defaultStoreRetry, ...durable?.storeRetry },
    deleteOnComplete: durable?.deleteOnComplete ?? false,
    ...(durable?.stream === undefined ? {} : { stream: durable.stream }),
    // Looked up per run, so a provider registered after the definition is still used.
    tracer: cairnTracer(tracerProvider),
  });
  const hooks = (options: ExecuteOptions | ResumeOptions) => ({
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.onBoundary === undefined ? {} : { onBoundary: options.onBoundary }),
  });

  return {
    async execute(input, options = {}) {
      const store = durable?.store ?? memoryStore({ clock: durable?.clock ?? systemClock });
      return runDurable(definition, {
        ...common(store),
        ...hooks(options),
        runId: options.runId === undefined ? crypto.randomUUID() : checkNewRunId(options.runId),
        mode: 'execute',
        input,
        ...(options.subject === undefined ? {} : { subject: checkSubject(options.subject) }),
        force: false,
      });
    },
    async resume(runId, options = {}) {
      checkRunId(runId);
      if (durable === undefined) {
        throw new CairnError(
          'STORE_REQUIRED',
          `Cannot resume run "${runId}": ${definition.kind} "${definition.name}" has no durable store. ` +
            'Pass durable: { store } to its definition.',
          { data: { runId } },
        );
      }
      return runDurable(definition, {
        ...common(durable.store),
        ...hooks(options),
        runId,
        mode: 'resume',
        force: options.force ?? false,
      });
    },
  };
}
