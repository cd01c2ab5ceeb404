import { LeaseLostError, CairnError } from '../errors.js';
import type { Boundary, BoundaryHook } from './step-function.js';

/** Why an attempt stopped before its run ended. */
type StopReason =
  | { type: 'crashed'; error: unknown }
  | { type: 'lease-lost'; error: LeaseLostError }
  | { type: 'cancelled'; reason: unknown }
  /** Handed over on shutdown: stop at the next boundary, keep the checkpoint, release the lease. */
  | { type: 'released' };

/**
 * One process's attempt at a run under one lease. Once stopped (crash, lease lost, cancelled) it starts no
 * effect and makes no write; `signal` aborts the effects still in flight.
 */
export class Attempt {
  readonly runId: string;
  readonly epoch: number;
  private readonly controller = new AbortController();
  private readonly hook: BoundaryHook | undefined;
  private stopReason: StopReason | undefined;
  private handingOver = false;

  private readonly parent: Attempt | undefined;

  /**
   * A child attempt (a child run under its parent's lease) stops when its parent stops, and a crash or a
   * lost lease in the child is the parent's too: they are one process under one lease.
   */
  constructor(runId: string, epoch: number, hook: BoundaryHook | undefined, parent?: Attempt) {
    this.runId = runId;
    this.epoch = epoch;
    this.hook = hook;
    this.parent = parent;
    if (parent !== undefined) {
      const follow = () => {
        if (parent.stopReason !== undefined) this.stop(parent.stopReason);
      };
      if (parent.signal.aborted) follow();
      else parent.signal.addEventListener('abort', follow, { once: true });
    }
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get stopped(): StopReason | undefined {
    return this.stopReason;
  }

  /** Runs the boundary hook; an error from it is a crash: the attempt is dead from here on. */
  async pass(boundary: Boundary): Promise<void> {
    if (this.handingOver && boundary.point === 'effect.before') this.stop({ type: 'released' });
    if (boundary.point === 'journal.before' || boundary.point === 'journal.after')
      this.assertMayWrite();
    else this.assertActive();
    if (this.hook === undefined) return;
    try {
      await this.hook(boundary);
    } catch (error) {
      this.stop({ type: 'crashed', error });
      throw error;
    }
  }

  loseLease(error: LeaseLostError): void {
    this.stop({ type: 'lease-lost', error });
  }

  cancel(reason: unknown): void {
    this.stop({ type: 'cancelled', reason });
  }

  /**
   * Hands the run over: effects already in flight finish and are journaled, a checkpoint may still be
   * written, but the next effect does not start; the attempt stops there with `RUN_RELEASED`.
   */
  handOver(): void {
    this.handingOver = true;
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
        `Run "${this.runId}" was handed over at a boundary; its checkpoint is kept for the next holder.`,
        { retryable: true, data: { runId: this.runId } },
      );
    }
    throw new CairnError('RUN_CANCELLED', `Run "${this.runId}" was cancelled.`, {
      cause: reason.reason,
      data: { runId: this.runId },
    });
  }

  private stop(reason: StopReason): void {
    if (this.stopReason !== undefined) return;
    this.stopReason = reason;
    // A crash or a fenced write in a child is the parent's too; a cancelled child is only a failed effect.
    if (reason.type === 'crashed' || reason.type === 'lease-lost') this.parent?.stop(reason);
    // A hand-over lets in-flight effects finish; every other stop aborts them.
    if (reason.type === 'released') return;
    this.controller.abort(reason.type === 'cancelled' ? reason.reason : new Error(reason.type));
  }
}
