import type { Context, Tracer } from '@opentelemetry/api';
import type { Clock } from '../clock.js';
import type { DurableStore, Lease, RunRecord, StoredRun } from '../store/contract.js';
import type { Attempt } from './attempt.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { StoreRetryPolicy } from './run-writer.js';
import type { StreamOptions } from './stream-options.js';
import type { BoundaryHook, DurableDefinition } from './step-function.js';

/** Everything one attempt at a run needs. */
export interface DurableRunOptions<Input> {
  store: DurableStore;
  runId: string;
  /** `execute` creates the run when it does not exist; `resume` requires it. */
  mode: 'execute' | 'resume';
  input?: Input;
  /** With `execute`, of a run it creates: whose data the run holds (`NewRun.subject`). */
  subject?: string;
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
  /**
   * Aborting it cancels the run: in-flight effects see their signal abort (one that ignores it is abandoned a
   * second later), and the run ends `cancelled`.
   */
  signal?: AbortSignal;
  /**
   * Aborting it hands the run over: no effect starts any more, those in flight finish (or reach their timeout)
   * and are written, and the lease is released at once so another worker can claim it (a worker shutting down).
   */
  handOverSignal?: AbortSignal;
  /** Lease renewal interval. @defaultValue leaseMs / 3 */
  heartbeatMs?: number;
  /** Claims from holders that never released it, past which the run is dead-lettered. @defaultValue no limit */
  maxRecoveries?: number;
  /**
   * Attempts in a row that ended in an error before the run could go on (`RunRecord.stalls`), at which the next
   * attempt dead-letters it with the last error. @defaultValue 5
   */
  maxStalls?: number;
  /** Also claim a run still leased to this owner (a restarted process). @defaultValue false */
  reclaimOwn?: boolean;
  /** The run's record as the caller just read it, which saves reading it again before the claim. */
  record?: RunRecord;
  /**
   * A lease the caller already claimed for this run (a worker's batch `claim`, with `claimed` set): the
   * attempt runs under it instead of claiming the run itself.
   */
  lease?: Lease;
  /** Called once the run is claimed, with the lease and the record as it was claimed. */
  onClaim?(lease: Lease, record: RunRecord): void;
  /** Model calls stream what they say to the run's stream log (see `DurableOptions.stream`). */
  stream?: boolean | StreamOptions;
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
 * How the attempt holds its run: its own heartbeat-renewed lease (with the run as the claim read it, when the
 * store read it then), or its parent's.
 */
export type Holding =
  | { type: 'own'; keeper: LeaseKeeper; claimed?: StoredRun }
  /** `takenFrom`: the owner the root's claim took it from, which the child was taken from with it. */
  | { type: 'child'; lease: Lease; takenFrom: string | null };

/** Runs a child run under a parent attempt; the claiming side supplies it, so the loop need not import it. */
export type ChildStarter = <State, Input, Output>(
  definition: DurableDefinition<State, Input, Output>,
  options: DurableRunOptions<Input>,
  parent: Attempt,
  parentLease: () => Lease,
) => Promise<DurableRunResult<State, Output>>;
