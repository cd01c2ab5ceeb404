import { setMaxListeners } from 'node:events';
import { LeaseLostError, CairnError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Fence } from '../store/contract.js';
import type { Boundary, BoundaryHook } from './step-function.js';

/** Why an attempt stopped before its run ended. */
type StopReason =
  | { type: 'crashed'; error: unknown }
  | { type: 'lease-lost'; error: LeaseLostError }
  | { type: 'cancelled'; reason: unknown }
  /** Handed over on shutdown: nothing new starts, what runs finishes and is written, the lease is released. */
  | { type: 'released' };

/**
 * One process's attempt at a run under one lease. Once stopped (crash, lease lost, cancelled) it starts no
 * effect and makes no write; `signal` aborts the effects still in flight.
 */
export class Attempt {
  /** What every write of this attempt names. */
  readonly fence: Fence;
  private readonly controller = new AbortController();
  private readonly hook: BoundaryHook | undefined;
  private readonly deadline: () => number;
  private stopReason: StopReason | undefined;
  private handOverRequested = false;
  private readonly parent: Attempt | undefined;

  /**
   * `deadline` is when the lease may have run out, on the local clock: no effect starts past it, whatever
   * a renewal in flight may later say. A child attempt (a child run under its parent's lease) stops when its
   * parent stops, and a crash, a lost lease or a hand-over in the child is the parent's too: they are one
   * process under one lease.
   */
  constructor(options: {
    fence: Fence;
    deadline: () => number;
    hook?: BoundaryHook | undefined;
    parent?: Attempt;
  }) {
    this.fence = options.fence;
    this.deadline = options.deadline;
    this.hook = options.hook;
    this.parent = options.parent;
    // Every try in flight (and every child attempt) listens on it: past Node's default of 10, not a leak.
    setMaxListeners(0, this.controller.signal);
    const parent = options.parent;
    if (parent !== undefined) {
      const follow = () => {
        if (parent.stopReason !== undefined) this.stop(parent.stopReason);
      };
      if (parent.signal.aborted) follow();
      else parent.signal.addEventListener('abort', follow, { once: true });
    }
  }

  get runId(): string {
    return this.fence.runId;
  }

  get epoch(): number {
    return this.fence.epoch;
  }

  /** When the lease holding this attempt may run out, on the local clock (a child's is its root's). */
  get leaseDeadline(): number {
    return this.deadline();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get stopped(): StopReason | undefined {
    return this.stopReason;
  }

  /** A hand-over was asked for (here or, for a child, of the parent): nothing new may start. */
  get handingOver(): boolean {
    return this.handOverRequested || (this.parent?.handingOver ?? false);
  }

  /**
   * Runs the boundary hook; an error from it is a crash: the attempt is dead from here on. An effect that
   * got past `beforeEffect` (its write-ahead mark may be written) runs and is recorded during a hand-over.
   */
  async pass(boundary: Boundary): Promise<void> {
    if (boundary.point === 'effect.before') this.assertMayContinue();
    else this.assertMayWrite();
    if (this.hook === undefined) return;
    try {
      await this.hook(boundary);
    } catch (error) {
      this.stop({ type: 'crashed', error });
      throw error;
    }
  }

  /**
   * The guard before an effect starts (before its write-ahead mark too): throws what stopped the attempt,
   * stops it for a hand-over, or takes the lease as lost when it ran out on the local clock (an event loop
   * stalled past it: the renewal that would say so has not even been sent).
   */
  beforeEffect(now: number): void {
    this.checkLeaseTime(now);
    if (this.handingOver) this.stop({ type: 'released' });
    this.assertActive();
  }

  /**
   * Throws what stopped the attempt (a hand-over does not stop what is in flight), and takes the lease as
   * lost once it ran out on the local clock.
   */
  checkLeaseTime(now: number): void {
    this.assertMayContinue();
    if (now < this.deadline()) return;
    this.loseLease(
      new LeaseLostError(
        this.runId,
        this.epoch,
        'its lease ran out on the local clock before a renewal confirmed it',
      ),
    );
    this.assertMayContinue();
  }

  loseLease(error: LeaseLostError): void {
    this.stop({ type: 'lease-lost', error });
  }

  cancel(reason: unknown): void {
    this.stop({ type: 'cancelled', reason });
  }

  /**
   * Hands the run over: effects already in flight finish and are journaled, a checkpoint may still be
   * written, but no effect starts any more; the attempt stops before the next one with `RUN_RELEASED`.
   */
  handOver(): void {
    this.handOverRequested = true;
  }

  /** An error an effect threw because this attempt (or its child) stopped: not the effect's outcome. */
  isStopError(error: unknown): boolean {
    const reason = this.stopReason;
    if (reason !== undefined && reason.type !== 'released') return true;
    return this.handingOver && error instanceof CairnError && error.code === 'RUN_RELEASED';
  }

  /** Throws unless the attempt is running or handing over: what is in flight may go on. */
  assertMayContinue(): void {
    if (this.stopReason?.type !== 'released') this.assertActive();
  }

  /** Throws when the attempt may no longer write: it crashed or lost its lease. */
  assertMayWrite(): void {
    const reason = this.stopReason;
    if (reason?.type === 'crashed' || reason?.type === 'lease-lost') this.assertActive();
  }

  /** Throws what stopped the attempt, if anything did: the guard before every effect and write. */
  assertActive(): void {
    const reason = this.stopReason;
    if (reason === undefined) return;
    if (reason.type === 'crashed') throw reason.error;
    if (reason.type === 'lease-lost') throw reason.error;
    if (reason.type === 'released') {
      throw new CairnError(
        'RUN_RELEASED',
        `Run "${this.runId}" was handed over; its checkpoint is kept for the next holder.`,
        { retryable: true, data: { runId: this.runId } },
      );
    }
    throw new CairnError('RUN_CANCELLED', `Run "${this.runId}" was cancelled.`, {
      cause: reason.reason,
      data: { runId: this.runId },
    });
  }

  /**
   * Waits `ms` on `clock` unless the attempt stops first; then throws what stopped it, a `CairnError` (the
   * abort's own reason may be anything a caller passed to its signal).
   */
  async sleep(clock: Clock, ms: number): Promise<void> {
    try {
      await clock.sleep(ms, this.signal);
    } catch (error) {
      this.assertActive();
      throw error;
    }
  }

  /** Stops for a hand-over that a child run noticed first. */
  stopForHandOver(): void {
    if (this.handingOver) this.stop({ type: 'released' });
  }

  private stop(reason: StopReason): void {
    // The first stop wins, except that a crash or a lost lease (no write may follow) overrides a cancel or a
    // hand-over (which may still write): a cancelled attempt whose write is then refused by the fence writes
    // nothing more, and the run is the new holder's to end.
    const current = this.stopReason;
    if (current !== undefined && (forbidsWrites(current) || !forbidsWrites(reason))) return;
    this.stopReason = reason;
    // A crash, a fenced write or a hand-over in a child is the parent's too; a cancelled child is only a
    // failed effect.
    if (reason.type !== 'cancelled') this.parent?.stop(reason);
    // A hand-over lets in-flight effects finish; every other stop aborts them.
    if (reason.type === 'released') return;
    this.controller.abort(reason.type === 'cancelled' ? reason.reason : reason.error);
  }
}

/** Whether a stop forbids every later write: a crash, or a lease lost. */
function forbidsWrites(reason: StopReason): boolean {
  return reason.type === 'crashed' || reason.type === 'lease-lost';
}
