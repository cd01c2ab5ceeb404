import type { Attributes } from '@opentelemetry/api';
import type { Clock } from '../clock.js';
import type { CairnError, SerializedError } from '../errors.js';
import type { JsonObject, JsonValue } from '../json.js';
import type { ModelStreamPart } from '../model.js';
import type { EffectOutcome } from '../store/contract.js';
import type { StreamPart } from '../store/stream.js';
import type { RunSignal } from '../store/waits.js';

/** How a definition names the spans of its effects; without it, effects get a generic span. */
export interface EffectTelemetry {
  /** The span of one effect: name and attributes (GenAI conventions for model and tool calls). */
  span(effect: Effect): { name: string; attributes: Attributes };
  /** The unit (an agent trip, a planner node) the effect belongs to; its span is the effect span's parent. */
  unit?(effect: Effect): { key: string; name: string; attributes: Attributes } | undefined;
  /** Attributes learnt from the effect's value, such as token usage. */
  result?(effect: Effect, value: JsonValue): Attributes;
}

/** What a command asks the runtime to do, as JSON: `kind` selects the definition's handler. */
export interface Effect extends JsonObject {
  kind: string;
}

/** How often and how patiently a failing effect is tried again. Only `retryable` errors are retried. */
export interface RetryPolicy {
  /** Tries in all, the first included. @defaultValue 1 */
  maxAttempts: number;
  /** Wait before the second try; doubles each time. @defaultValue 200 */
  initialDelayMs?: number;
  /** Longest wait between tries. @defaultValue 10000 */
  maxDelayMs?: number;
}

/** Perform one effect. Its `id` is stable across replays: the journal is keyed by it. */
export interface PerformCommand {
  type: 'perform';
  id: string;
  effect: Effect;
  /**
   * Safe to run again after a crash left it in flight. A non-idempotent effect is journaled as started
   * before it runs, and one found started but not settled is answered with outcome `unknown` instead.
   */
  idempotent: boolean;
  retry?: RetryPolicy;
  /**
   * How long one try may run. Past it the try is abandoned (its signal aborts, a later result is dropped): a
   * non-idempotent effect settles as outcome `unknown`, never tried again; an idempotent one fails with a
   * retryable `TOOL_TIMEOUT` error, tried again under `retry`. An effect that started a child run is not
   * abandoned: the child stops on its own. @defaultValue no timeout
   */
  timeoutMs?: number;
  /**
   * An id an earlier version may have journaled this effect under, shared with another effect (an agent's tool
   * call whose id the model repeated). When the effect starts with no marks under `id` and some under this one,
   * a non-idempotent effect is answered with outcome `unknown` instead of being run: it may have run already.
   */
  formerId?: string;
}

/**
 * Wait, holding nothing, until a time, until a signal of one of these names is in the run's mailbox, or both
 * (whichever comes first). Only once no effect is pending. The step then sees a `woken` event. `detail` is what
 * the run tells a reader it waits for (`RunRecord.wait.detail`).
 */
export interface WaitCommand {
  type: 'wait';
  /** Milliseconds since the epoch on the runtime's clock (a step computes it from its event's `now`). */
  until?: number;
  signals?: readonly string[];
  detail?: JsonValue;
}

/** A step's instruction to the runtime. */
export type Command =
  | PerformCommand
  /** Write a checkpoint of the new state (and the effects still to perform) before anything else. */
  | { type: 'checkpoint' }
  | WaitCommand
  | { type: 'complete'; output: JsonValue }
  | { type: 'fail'; error: SerializedError };

/** An effect's settled outcome, as handed back to the step function. */
export interface SettledEffect {
  id: string;
  outcome: EffectOutcome;
}

/**
 * What the step function reacts to. `now` is the clock's reading, journaled so replays see the same. With
 * `stepping: 'each'`, a `settled` event holds one effect, and a step may return no command at all while
 * other effects are still running.
 */
export type StepEvent =
  | { type: 'start'; now: number }
  | { type: 'settled'; now: number; effects: readonly SettledEffect[] }
  /**
   * A wait ended: `signals` are the mailbox's signals not seen before (any name, oldest first), and `timedOut`
   * says no signal it waited for had arrived (its time came, or a cancel woke it).
   */
  | { type: 'woken'; now: number; signals: readonly RunSignal[]; timedOut: boolean }
  /** Signals that arrived while the run ran (see `DurableDefinition.receivesSignals`), oldest first. */
  | { type: 'signals'; now: number; signals: readonly RunSignal[] };

/** A step's answer: the next state and what to do. */
export interface StepResult<State> {
  state: State;
  commands: readonly Command[];
}

/** What the runtime hands an effect handler. */
export interface EffectContext<State = unknown> {
  runId: string;
  /** The state whose step commanded the effect. */
  state: State;
  effectId: string;
  /** The lease epoch the effect runs under. */
  epoch: number;
  /** Aborts when the try runs past the effect's `timeoutMs`, or when the run is cancelled or its lease is lost. */
  signal: AbortSignal;
  clock: Clock;
  /** Which try of this effect this is, from 1. */
  attempt: number;
  /**
   * Where a model call says what it says while it runs, when the run streams (see `DurableOptions.stream`):
   * each delta goes to the run's stream log. Absent when it does not.
   */
  stream?: (part: ModelStreamPart) => void;
  /**
   * Runs (or continues) a child run under this run's lease: its own checkpoints under `childRunId`, its
   * writes fenced by this run's epoch. A child that already ended returns its stored end at once.
   */
  runChild<ChildState, ChildInput, ChildOutput>(
    definition: DurableDefinition<ChildState, ChildInput, ChildOutput>,
    input: ChildInput,
    childRunId: string,
  ): Promise<ChildRunResult<ChildState, ChildOutput>>;
}

/** How a child run ended. */
export interface ChildRunResult<State, Output> {
  runId: string;
  output: Output;
  state: State;
}

/**
 * A durable step function: everything the runtime needs to run, checkpoint and resume one kind of run.
 * `init` and `step` are pure; `perform` is where the I/O happens.
 */
export interface DurableDefinition<State, Input, Output> {
  readonly kind: string;
  readonly name: string;
  /** Structural hash of the definition; a checkpoint taken under another one is drift. */
  readonly signature: string;
  init(input: Input, runId: string): State;
  step(state: State, event: StepEvent): StepResult<State>;
  perform(effect: Effect, context: EffectContext<State>): Promise<JsonValue>;
  /** Whether performing `effect` may say something to the run's stream (a model call): it gets a sink. */
  streams?(effect: Effect): boolean;
  /**
   * What a settled effect says to the run's stream, when the run streams: an agent's tool call, its outcome.
   * Undefined for an effect that says nothing of how it settled.
   */
  streamOutcome?(effect: Effect, outcome: EffectOutcome): StreamPart | undefined;
  /** Validates a stored state; throws for a malformed one. */
  parseState(state: JsonValue): State;
  /** Turns a stored output back into the definition's output type. */
  parseOutput(output: JsonValue): Output;
  driftError(runId: string, stored: string, current: string): CairnError;
  /**
   * Checks an effect read back from a store, with the value the journal says it settled with, if any, and the
   * stored state it is pending in: why it is not an effect this definition commands from that state or a value
   * it answers (a corrupted row), else undefined. A run whose stored effects fail it is refused with
   * `SNAPSHOT_INVALID` before anything runs.
   */
  checkStoredEffect?(
    effect: Effect,
    settled: { value: JsonValue } | undefined,
    state: State,
  ): string | undefined;
  /** How the spans of its effects are named and grouped into trips or nodes. */
  readonly telemetry?: EffectTelemetry;
  /**
   * `batch`: the step sees a step's effects once all of them settled. `each`: it sees each effect as soon as
   * it settles, while the others still run, and may command more (a planner starting the next ready node).
   * @defaultValue 'batch'
   */
  readonly stepping?: 'batch' | 'each';
  /**
   * The step takes signals while the run runs: at a step that checkpoints, completes or waits while no effect is
   * in flight, the runtime reads the mailbox and, when it holds signals the step has not seen, hands them over
   * as a `signals` event instead of acting on that step's commands. Without it, signals reach the step only
   * when a wait ends. Either way a signal is consumed by the checkpoint that follows, never before.
   * @defaultValue false
   */
  readonly receivesSignals?: boolean;
}

/** The points between which a crash can fall. */
export type BoundaryPoint =
  | 'effect.before'
  | 'effect.after'
  | 'journal.before'
  | 'journal.after'
  | 'checkpoint.before'
  | 'checkpoint.after';

/** One boundary as a run passes it; crash-injection harnesses enumerate these. */
export interface Boundary {
  point: BoundaryPoint;
  runId: string;
  /** For effect boundaries: the effect's id and kind. */
  effectId?: string;
  effectKind?: string;
  /** For journal boundaries: the marks the write carries, each `started:<effectId>` or `settled:<effectId>`. */
  entries?: readonly string[];
  /** For checkpoint boundaries: the status written. */
  status?: string;
}

/**
 * Called at every boundary; a promise it returns is awaited, any other value ignored (so a one-line arrow such
 * as `(b) => seen.push(b)` fits). Throwing from it stops the attempt as a crash would: nothing more is
 * written, the lease is not released, and the error propagates to the caller.
 */
export type BoundaryHook = (boundary: Boundary) => unknown;
