import { LeaseLostError } from '../errors.js';
import { jsonClone } from '../json.js';
import type {
  Checkpoint,
  ClaimableOptions,
  Fence,
  JournalEntry,
  Lease,
  RunRecord,
} from './contract.js';
import { claimableStatuses, isTerminalStatus } from './contract.js';
import { isWaitDue, type RunSignal } from './waits.js';

/** One run as the memory store keeps it. */
export interface MemoryRun {
  record: RunRecord;
  /**
   * The last checkpoint its holder handed over, and the copy of it kept: the next checkpoint shares the copies
   * of the parts it still holds (see `jsonCopyBeside`). Kept while the holder goes on, not after it let go.
   */
  saved?: { checkpoint: Checkpoint; copy: Checkpoint } | undefined;
  journal: JournalEntry[];
  /** The highest journal seq ever appended, kept across checkpoints. */
  highestSeq: number;
  /** The journal seq the stored checkpoint accounts for. */
  checkpointSeq: number;
  /** Every signal accepted, consumed ones included (their idempotency keys still count). */
  signals: RunSignal[];
  /** The highest signal seq a checkpoint consumed. */
  signalsConsumed: number;
}

/** The runs of one memory store, and the rules every operation on them shares (views, fences, claims). */
export type MemoryRuns = ReturnType<typeof memoryRuns>;

/** A memory store's runs and its work listeners. */
export function memoryRuns() {
  const runs = new Map<string, MemoryRun>();
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const listener of listeners) listener();
  };

  /** The record as the contract shows it: a child's lease fields are its root's. */
  function view(run: MemoryRun): RunRecord {
    const record = jsonClone(run.record);
    if (record.rootRunId !== null) {
      const root = runs.get(record.rootRunId)?.record;
      record.owner = root?.owner ?? null;
      record.leaseUntil = root?.leaseUntil ?? null;
    }
    return record;
  }

  function unconsumed(run: MemoryRun): RunSignal[] {
    return run.signals.filter((signal) => signal.seq > run.signalsConsumed);
  }

  /** Claimable now: a run that does not wait, or one whose wait is due or whose cancel was asked. */
  function isAwake(run: MemoryRun, now: number): boolean {
    const { record } = run;
    if (record.status !== 'waiting') return claimableStatuses.includes(record.status);
    return (
      record.cancelRequested || record.wait === null || isWaitDue(record.wait, unconsumed(run), now)
    );
  }

  function isHeld(run: MemoryRun, now: number): boolean {
    // A child's lease is its root's, as `view` shows it (read here without copying the record).
    const holder =
      run.record.rootRunId === null ? run.record : runs.get(run.record.rootRunId)?.record;
    const owner = holder?.owner ?? null;
    const leaseUntil = holder?.leaseUntil ?? null;
    return owner !== null && leaseUntil !== null && leaseUntil > now;
  }

  function fence(target: Fence, allowFinal?: string): MemoryRun {
    const { runId, epoch } = target;
    const run = runs.get(runId);
    if (run === undefined) throw new LeaseLostError(runId, epoch, 'the run no longer exists');
    if (run.record.incarnation !== target.incarnation) {
      throw new LeaseLostError(runId, epoch, 'the run was deleted and created again');
    }
    if (run.record.epoch !== epoch) throw new LeaseLostError(runId, epoch);
    if (target.root !== undefined) {
      const root = runs.get(target.root.runId)?.record;
      if (root?.incarnation !== target.root.incarnation || root.epoch !== epoch) {
        throw new LeaseLostError(
          runId,
          epoch,
          `the lease of its root run "${target.root.runId}" was lost`,
        );
      }
    }
    const status = run.record.status;
    if (isTerminalStatus(status) && status !== allowFinal) {
      throw new LeaseLostError(runId, epoch, `the run already ended ${status}`);
    }
    return run;
  }

  /** Claims a free run for `owner`: the epoch rises, a claim from a holder that never released counts. */
  function claimRun(run: MemoryRun, owner: string, ttlMs: number, now: number): Lease {
    const { record } = run;
    const takenFrom = record.owner;
    if (record.owner !== null) record.recoveries += 1;
    record.epoch += 1;
    record.owner = owner;
    record.leaseUntil = now + ttlMs;
    record.updatedAt = now;
    return {
      runId: record.runId,
      incarnation: record.incarnation,
      owner,
      epoch: record.epoch,
      leaseUntil: record.leaseUntil,
      recoveries: record.recoveries,
      cancelRequested: record.cancelRequested,
      takenFrom,
      claimed: {
        run: view(run),
        journal: jsonClone(run.journal),
        signals: jsonClone(unconsumed(run)),
        ...(run.checkpointSeq === -Infinity ? {} : { checkpointSeq: run.checkpointSeq }),
      },
    };
  }

  function deleteWithChildren(runId: string): void {
    runs.delete(runId);
    for (const [id, run] of runs) if (run.record.parent?.runId === runId) deleteWithChildren(id);
  }

  return {
    runs,
    listeners,
    notify,
    view,
    unconsumed,
    isAwake,
    isHeld,
    fence,
    claimRun,
    deleteWithChildren,
  };
}

/** Of one of the definitions, and free to claim. */
export function claimable(
  record: RunRecord,
  definitions: ClaimableOptions['definitions'],
  now: number,
  reclaimOwner: string | undefined,
): boolean {
  return (
    definitions.some((d) => d.kind === record.kind && d.name === record.name) &&
    isFree(record, now, reclaimOwner)
  );
}

/** Nobody holds the run: no owner, or a lease that ran out (or, to reclaim, this same owner). */
export function isFree(record: RunRecord, now: number, reclaimOwner: string | undefined): boolean {
  return (
    record.owner === null ||
    record.leaseUntil === null ||
    record.leaseUntil <= now ||
    (reclaimOwner !== undefined && record.owner === reclaimOwner)
  );
}
