import { systemClock, type Clock } from '../clock.js';
import { LeaseLostError, RunNotFoundError } from '../errors.js';
import { jsonClone } from '../json.js';
import type {
  AcquireOptions,
  Checkpoint,
  DurableStore,
  JournalEntry,
  Lease,
  ClaimableOptions,
  NewRun,
  PruneOptions,
  RunFilter,
  RunRecord,
  StoredRun,
} from './contract.js';
import { claimableStatuses, isTerminalStatus, terminalStatuses } from './contract.js';

/** Options of `memoryStore`. */
export interface MemoryStoreOptions {
  /** The clock that decides when a lease has run out. @defaultValue systemClock */
  clock?: Clock;
}

interface MemoryRun {
  record: RunRecord;
  journal: JournalEntry[];
  /** The highest journal seq ever appended, kept across checkpoints. */
  highestSeq: number;
}

/**
 * A `SnapshotStore` and `LeaseStore` in this process's memory, with the same fencing as the real stores.
 * Everything goes through JSON on the way in and out, so it also catches state that is not JSON.
 */
export function memoryStore(options: MemoryStoreOptions = {}): DurableStore {
  const clock = options.clock ?? systemClock;
  const runs = new Map<string, MemoryRun>();
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const listener of listeners) listener();
  };

  function mustGet(runId: string): MemoryRun {
    const run = runs.get(runId);
    if (run === undefined) throw new RunNotFoundError(runId);
    return run;
  }

  function fence(runId: string, epoch: number): MemoryRun {
    const run = runs.get(runId);
    if (run === undefined) throw new LeaseLostError(runId, epoch, 'the run no longer exists');
    if (run.record.epoch !== epoch) throw new LeaseLostError(runId, epoch);
    return run;
  }

  return {
    async create(init: NewRun) {
      const existing = runs.get(init.runId);
      if (existing !== undefined) return { created: false, run: jsonClone(existing.record) };
      const now = clock.now();
      const record: RunRecord = {
        runId: init.runId,
        kind: init.kind,
        name: init.name,
        signature: init.signature,
        status: init.status ?? 'running',
        epoch: 0,
        snapshot: jsonClone(init.snapshot),
        owner: null,
        leaseUntil: null,
        recoveries: 0,
        cancelRequested: false,
        createdAt: now,
        updatedAt: now,
      };
      runs.set(init.runId, { record, journal: [], highestSeq: -Infinity });
      notify();
      return { created: true, run: jsonClone(record) };
    },

    async load(runId): Promise<StoredRun | undefined> {
      const run = runs.get(runId);
      if (run === undefined) return undefined;
      return jsonClone({ run: run.record, journal: run.journal });
    },

    async save(runId, epoch, checkpoint: Checkpoint) {
      const run = fence(runId, epoch);
      const copy = jsonClone(checkpoint);
      const record: RunRecord = {
        ...run.record,
        status: copy.status,
        signature: copy.signature,
        snapshot: copy.snapshot,
        updatedAt: clock.now(),
      };
      delete record.output;
      delete record.error;
      if (copy.output !== undefined) record.output = copy.output;
      if (copy.error !== undefined) record.error = copy.error;
      run.record = record;
      run.journal = [];
    },

    async append(runId, epoch, entries) {
      const run = fence(runId, epoch);
      for (const entry of jsonClone(entries)) {
        // A retried append whose first attempt landed repeats seqs that are already stored: skip them.
        if (entry.seq <= run.highestSeq) continue;
        run.journal.push(entry);
        run.highestSeq = entry.seq;
      }
      run.record.updatedAt = clock.now();
    },

    async updateStatus(runId, epoch, update) {
      const run = fence(runId, epoch);
      const copy = jsonClone(update);
      run.record.status = copy.status;
      delete run.record.error;
      if (copy.error !== undefined) run.record.error = copy.error;
      run.record.updatedAt = clock.now();
    },

    async list(filter: RunFilter = {}) {
      const statuses =
        filter.status === undefined
          ? undefined
          : typeof filter.status === 'string'
            ? [filter.status]
            : filter.status;
      const matching = [...runs.values()]
        .map((run) => run.record)
        .filter(
          (record) =>
            (statuses === undefined || statuses.includes(record.status)) &&
            (filter.kind === undefined || record.kind === filter.kind) &&
            (filter.name === undefined || record.name === filter.name),
        )
        .sort((a, b) => a.createdAt - b.createdAt);
      return jsonClone(filter.limit === undefined ? matching : matching.slice(0, filter.limit));
    },

    async delete(runId) {
      return runs.delete(runId);
    },

    async prune({ olderThan, status }: PruneOptions) {
      const before = typeof olderThan === 'number' ? olderThan : olderThan.getTime();
      const statuses =
        status === undefined ? terminalStatuses : typeof status === 'string' ? [status] : status;
      let deleted = 0;
      for (const [runId, run] of runs) {
        if (statuses.includes(run.record.status) && run.record.updatedAt < before) {
          runs.delete(runId);
          deleted += 1;
        }
      }
      return deleted;
    },

    async acquire(runId, { owner, ttlMs, reclaimOwn }: AcquireOptions): Promise<Lease | undefined> {
      const { record } = mustGet(runId);
      const now = clock.now();
      if (!isFree(record, now, reclaimOwn === true ? owner : undefined)) return undefined;
      if (record.owner !== null) record.recoveries += 1;
      record.epoch += 1;
      record.owner = owner;
      record.leaseUntil = now + ttlMs;
      record.updatedAt = now;
      return {
        runId,
        owner,
        epoch: record.epoch,
        leaseUntil: record.leaseUntil,
        recoveries: record.recoveries,
        cancelRequested: record.cancelRequested,
      };
    },

    async claimable({ limit, definitions, reclaimOwner }: ClaimableOptions) {
      const now = clock.now();
      return [...runs.values()]
        .map((run) => run.record)
        .filter(
          (record) =>
            claimableStatuses.includes(record.status) &&
            definitions.some((d) => d.kind === record.kind && d.name === record.name) &&
            isFree(record, now, reclaimOwner),
        )
        .sort((a, b) => a.createdAt - b.createdAt)
        .slice(0, limit)
        .map((record) => record.runId);
    },

    async requestCancel(runId) {
      const record = runs.get(runId)?.record;
      if (record === undefined || isTerminalStatus(record.status)) return false;
      record.cancelRequested = true;
      record.updatedAt = clock.now();
      return true;
    },

    async subscribe(onWork) {
      listeners.add(onWork);
      return async () => {
        listeners.delete(onWork);
      };
    },

    async renew(lease, ttlMs) {
      const run = runs.get(lease.runId);
      const record = run?.record;
      if (record === undefined || record.epoch !== lease.epoch || record.owner !== lease.owner) {
        throw new LeaseLostError(lease.runId, lease.epoch);
      }
      record.leaseUntil = clock.now() + ttlMs;
      return { ...lease, leaseUntil: record.leaseUntil, cancelRequested: record.cancelRequested };
    },

    async adopt(childRunId, parent) {
      const record = mustGet(childRunId).record;
      if (record.epoch > parent.epoch) return undefined;
      record.epoch = parent.epoch;
      record.owner = parent.owner;
      record.leaseUntil = parent.leaseUntil;
      record.updatedAt = clock.now();
      return {
        runId: childRunId,
        owner: parent.owner,
        epoch: parent.epoch,
        leaseUntil: parent.leaseUntil,
      };
    },

    async release(lease) {
      const record = runs.get(lease.runId)?.record;
      if (record === undefined || record.epoch !== lease.epoch || record.owner !== lease.owner)
        return;
      record.owner = null;
      record.leaseUntil = null;
      notify();
    },
  };
}

/** Nobody holds the run: no owner, or a lease that ran out (or, to reclaim, this same owner). */
function isFree(record: RunRecord, now: number, reclaimOwner: string | undefined): boolean {
  return (
    record.owner === null ||
    record.leaseUntil === null ||
    record.leaseUntil <= now ||
    (reclaimOwner !== undefined && record.owner === reclaimOwner)
  );
}
