import { systemClock, type Clock } from '../clock.js';
import {
  CairnError,
  LeaseHeldError,
  LeaseLostError,
  notAChildError,
  RunNotFoundError,
  runEndedError,
} from '../errors.js';
import { jsonClone } from '../json.js';
import type {
  AcquireOptions,
  Checkpoint,
  ClaimableOptions,
  DurableStore,
  Lease,
  NewRun,
  PruneOptions,
  RunFilter,
  RunRecord,
  StoredRun,
} from './contract.js';
import { isTerminalStatus, terminalStatuses } from './contract.js';
import { checkDecision, decisionSignal } from './decisions.js';
import { jsonCopyBeside } from './json-copies.js';
import { signalDecision } from './memory-decisions.js';
import { checkNewSignal, checkRunWait } from './waits.js';
import { claimable, isFree, memoryRuns, type MemoryRun } from './memory-runs.js';
import { memoryPayloads } from './memory-payloads.js';
import { memoryStreams } from './memory-stream.js';

/** Options of `memoryStore`. */
export interface MemoryStoreOptions {
  /** The clock that decides when a lease has run out. @defaultValue systemClock */
  clock?: Clock;
}

/**
 * A `SnapshotStore` and `LeaseStore` in this process's memory, with the same fencing as the real stores.
 * Everything goes through JSON on the way in and out, so it also catches state that is not JSON.
 */
export function memoryStore(options: MemoryStoreOptions = {}): DurableStore {
  const clock = options.clock ?? systemClock;
  const {
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
  } = memoryRuns();
  // Incarnations never repeat within a store: a re-created run id is told apart from the one deleted.
  let incarnations = 0;
  const { planAppend, appendStream, readStream, streamPosition, logOf } = memoryStreams(
    runs,
    fence,
  );

  return {
    ...memoryPayloads(runs, logOf),
    appendStream,
    readStream,
    streamPosition,
    streamsWithWrites: true,

    async create(init: NewRun) {
      const existing = runs.get(init.runId);
      const staleChild =
        existing !== undefined &&
        init.parent !== undefined &&
        existing.record.parent?.runId === init.parent.runId &&
        existing.record.parent.incarnation !== init.parent.incarnation;
      if (existing !== undefined && !staleChild) return { created: false, run: view(existing) };
      let rootRunId: string | null = null;
      if (init.parent !== undefined) {
        const parent = runs.get(init.parent.runId)?.record;
        if (parent?.incarnation !== init.parent.incarnation) {
          throw new RunNotFoundError(init.parent.runId);
        }
        rootRunId = parent.rootRunId ?? parent.runId;
      }
      if (staleChild) deleteWithChildren(init.runId);
      const status = init.status ?? 'running';
      const wait = status === 'waiting' ? checkRunWait(init.wait as never) : null;
      const now = clock.now();
      const record: RunRecord = {
        runId: init.runId,
        incarnation: String((incarnations += 1)),
        kind: init.kind,
        name: init.name,
        signature: init.signature,
        status,
        wait: jsonClone(wait),
        epoch: 0,
        snapshot: jsonClone(init.snapshot),
        owner: null,
        leaseUntil: null,
        recoveries: 0,
        stalls: 0,
        cancelRequested: false,
        parent:
          init.parent === undefined
            ? null
            : { runId: init.parent.runId, incarnation: init.parent.incarnation },
        rootRunId,
        createdAt: now,
        updatedAt: now,
      };
      const run: MemoryRun = {
        record,
        journal: [],
        highestSeq: -Infinity,
        checkpointSeq: -Infinity,
        signals: [],
        signalsConsumed: 0,
      };
      runs.set(init.runId, run);
      notify();
      return { created: true, run: view(run) };
    },

    async load(runId): Promise<StoredRun | undefined> {
      const run = runs.get(runId);
      if (run === undefined) return undefined;
      return {
        run: view(run),
        journal: jsonClone(run.journal),
        signals: jsonClone(unconsumed(run)),
        ...(run.checkpointSeq === -Infinity ? {} : { checkpointSeq: run.checkpointSeq }),
      };
    },

    async save(target, carried: Checkpoint) {
      const checkpoint = carried.stream === undefined ? carried : withoutStream(carried);
      if (checkpoint.status === 'waiting') {
        checkRunWait(checkpoint.wait as never);
        if (checkpoint.release !== true || target.root !== undefined) {
          throw new CairnError(
            'INVALID_ARGUMENT',
            'A wait is written by the holder of a run’s own lease, releasing it.',
          );
        }
      }
      const run = fence(target, checkpoint.status);
      // Saving the final status it already has again is a retried write: it changes nothing.
      if (isTerminalStatus(run.record.status)) return { written: true, mail: false };
      const mailAbove = (cursor: number) => run.signals.length > cursor;
      if (
        checkpoint.unlessMail === true &&
        mailAbove(Math.max(run.signalsConsumed, checkpoint.signalsConsumed ?? 0))
      ) {
        return { written: false, mail: true };
      }
      if (checkpoint.journalSeq < run.checkpointSeq) {
        throw new LeaseLostError(target.runId, target.epoch, 'a newer checkpoint is stored');
      }
      // Checked before anything changes: a bad chunk refuses the whole checkpoint.
      const writeStream = carried.stream && planAppend(run, target.runId, carried.stream);
      if (checkpoint.release === true && target.root === undefined) {
        run.record.owner = null;
        run.record.leaseUntil = null;
      }
      const copy = jsonCopyBeside(checkpoint, run.saved?.checkpoint, run.saved?.copy);
      const goesOn = checkpoint.release !== true && !isTerminalStatus(checkpoint.status);
      run.saved = goesOn ? { checkpoint, copy } : undefined;
      const record: RunRecord = {
        ...run.record,
        status: copy.status,
        signature: copy.signature,
        snapshot: copy.snapshot,
        wait: copy.status === 'waiting' ? (copy.wait ?? null) : null,
        stalls: 0,
        updatedAt: clock.now(),
      };
      delete record.output;
      delete record.error;
      if (copy.output !== undefined) record.output = copy.output;
      if (copy.error !== undefined) record.error = copy.error;
      run.record = record;
      run.checkpointSeq = copy.journalSeq;
      run.journal = run.journal.filter((entry) => entry.seq > copy.journalSeq);
      writeStream?.();
      if (copy.signalsConsumed !== undefined && copy.signalsConsumed > run.signalsConsumed) {
        run.signalsConsumed = Math.min(copy.signalsConsumed, run.signals.length);
      }
      if (copy.status === 'waiting') notify();
      return { written: true, mail: mailAbove(run.signalsConsumed) };
    },

    async append(target, entries, stream) {
      const run = fence(target);
      if (entries.some((entry) => entry.seq <= run.checkpointSeq))
        throw new LeaseLostError(target.runId, target.epoch, 'a newer checkpoint is stored');
      if (stream !== undefined) planAppend(run, target.runId, stream)();
      for (const entry of jsonClone(entries)) {
        // A retried append whose first attempt landed repeats seqs that are already stored: skip them.
        if (entry.seq <= run.highestSeq) continue;
        run.journal.push(entry);
        run.highestSeq = entry.seq;
      }
      run.record.updatedAt = clock.now();
    },

    async updateStatus(target, update) {
      const run = fence(target, update.status);
      if (isTerminalStatus(run.record.status)) return;
      if (update.status === 'waiting' && run.record.status !== 'waiting') {
        throw new CairnError(
          'INVALID_ARGUMENT',
          'A run starts waiting with a checkpoint, not a status change.',
        );
      }
      const copy = jsonClone(update);
      run.record.status = copy.status;
      if (copy.status !== 'waiting') run.record.wait = null;
      delete run.record.error;
      if (copy.error !== undefined) run.record.error = copy.error;
      if (copy.stalls !== undefined) run.record.stalls = copy.stalls;
      run.record.updatedAt = clock.now();
    },

    async list(filter: RunFilter = {}) {
      const statuses =
        filter.status === undefined
          ? undefined
          : typeof filter.status === 'string'
            ? [filter.status]
            : filter.status;
      // Creation order: by time, then by incarnation (a counter), so runs created in one tick keep their order.
      const order = (record: RunRecord) => [record.createdAt, Number(record.incarnation)] as const;
      const before = (a: RunRecord, b: RunRecord) =>
        order(a)[0] - order(b)[0] || order(a)[1] - order(b)[1];
      let after: RunRecord | undefined;
      if (filter.after !== undefined) {
        after = runs.get(filter.after)?.record;
        if (after === undefined) throw new RunNotFoundError(filter.after);
      }
      const matching = [...runs.values()]
        .filter(
          ({ record }) =>
            (statuses === undefined || statuses.includes(record.status)) &&
            (filter.kind === undefined || record.kind === filter.kind) &&
            (filter.name === undefined || record.name === filter.name) &&
            (after === undefined || before(after, record) < 0),
        )
        .sort((a, b) => before(a.record, b.record));
      return (filter.limit === undefined ? matching : matching.slice(0, filter.limit)).map(view);
    },

    async signal(runId, signal) {
      const checked = checkNewSignal(signal);
      const run = runs.get(runId);
      if (run === undefined) throw new RunNotFoundError(runId);
      const { record } = run;
      if (record.rootRunId !== null) {
        throw new CairnError(
          'INVALID_ARGUMENT',
          `Run "${runId}" is a child run: signal its root run "${record.rootRunId}".`,
          { data: { runId, rootRunId: record.rootRunId } },
        );
      }
      if (checked.name === decisionSignal) {
        const receipt = signalDecision(run, checkDecision(runId, checked.payload), clock.now());
        if (!receipt.duplicate && record.status === 'waiting') notify();
        return receipt;
      }
      if (isTerminalStatus(record.status)) throw runEndedError(runId, record.status);
      if (checked.idempotencyKey !== null) {
        const first = run.signals.find((s) => s.idempotencyKey === checked.idempotencyKey);
        if (first !== undefined) return { seq: first.seq, duplicate: true };
      }
      const seq = run.signals.length + 1;
      run.signals.push({ seq, ...jsonClone(checked), at: clock.now() });
      record.updatedAt = clock.now();
      if (record.status === 'waiting') notify();
      return { seq, duplicate: false };
    },

    async mailbox(runId) {
      const run = runs.get(runId);
      return run === undefined ? [] : jsonClone(unconsumed(run));
    },

    async delete(runId) {
      const run = runs.get(runId);
      if (run === undefined) return false;
      if (isHeld(run, clock.now())) throw new LeaseHeldError(runId);
      deleteWithChildren(runId);
      return true;
    },

    async prune({ olderThan, status }: PruneOptions) {
      const before = typeof olderThan === 'number' ? olderThan : olderThan.getTime();
      const statuses =
        status === undefined ? terminalStatuses : typeof status === 'string' ? [status] : status;
      const now = clock.now();
      let deleted = 0;
      for (const [runId, run] of [...runs]) {
        if (
          runs.has(runId) &&
          run.record.rootRunId === null &&
          statuses.includes(run.record.status) &&
          run.record.updatedAt < before &&
          !isHeld(run, now)
        ) {
          deleteWithChildren(runId);
          deleted += 1;
        }
      }
      return deleted;
    },

    async acquire(runId, { owner, ttlMs, reclaimOwn }: AcquireOptions): Promise<Lease | undefined> {
      const run = runs.get(runId);
      if (run === undefined) throw new RunNotFoundError(runId);
      const now = clock.now();
      if (run.record.rootRunId !== null || isTerminalStatus(run.record.status)) return undefined;
      if (!isFree(run.record, now, reclaimOwn === true ? owner : undefined)) return undefined;
      return claimRun(run, owner, ttlMs, now);
    },

    async claim({ limit, definitions, reclaimOwner, owner, ttlMs, skip = [], now: wakeNow }) {
      const now = clock.now();
      return [...runs.values()]
        .filter(
          (run) =>
            run.record.rootRunId === null &&
            !skip.includes(run.record.runId) &&
            isAwake(run, wakeNow ?? now) &&
            claimable(run.record, definitions, now, reclaimOwner),
        )
        .sort((a, b) => a.record.createdAt - b.record.createdAt)
        .slice(0, limit)
        .map((run) => claimRun(run, owner, ttlMs, now));
    },

    async claimable({ limit, definitions, reclaimOwner, now: wakeNow }: ClaimableOptions) {
      const now = clock.now();
      return [...runs.values()]
        .filter(
          (run) =>
            run.record.rootRunId === null &&
            isAwake(run, wakeNow ?? now) &&
            claimable(run.record, definitions, now, reclaimOwner),
        )
        .sort((a, b) => a.record.createdAt - b.record.createdAt)
        .slice(0, limit)
        .map((run) => run.record.runId);
    },

    async nextWake(definitions, after) {
      const now = clock.now();
      let earliest: number | null = null;
      for (const { record } of runs.values()) {
        const until = record.status === 'waiting' ? record.wait?.until : undefined;
        if (until === undefined || until === null || record.rootRunId !== null) continue;
        if (after !== undefined && until <= after) continue;
        if (!claimable(record, definitions, now, undefined)) continue;
        if (earliest === null || until < earliest) earliest = until;
      }
      return earliest;
    },

    async requestCancel(runId) {
      const record = runs.get(runId)?.record;
      if (record === undefined || record.rootRunId !== null || isTerminalStatus(record.status))
        return false;
      record.cancelRequested = true;
      record.updatedAt = clock.now();
      // A waiting run has no holder to see the flag: it becomes claimable, and its claimer cancels it.
      if (record.status === 'waiting') notify();
      return true;
    },

    async subscribe(onWork) {
      listeners.add(onWork);
      return async () => {
        listeners.delete(onWork);
      };
    },

    async renew(lease, ttlMs) {
      const record = runs.get(lease.runId)?.record;
      if (
        record === undefined ||
        record.incarnation !== lease.incarnation ||
        record.epoch !== lease.epoch ||
        record.owner !== lease.owner
      ) {
        throw new LeaseLostError(lease.runId, lease.epoch);
      }
      record.leaseUntil = clock.now() + ttlMs;
      return { ...lease, leaseUntil: record.leaseUntil, cancelRequested: record.cancelRequested };
    },

    async adopt(childRunId, parent) {
      const child = runs.get(childRunId);
      if (child === undefined) throw new RunNotFoundError(childRunId);
      const { record } = child;
      if (
        record.parent?.runId !== parent.runId ||
        record.parent.incarnation !== parent.incarnation
      ) {
        throw notAChildError(childRunId, parent.runId);
      }
      const root = parent.root ?? { runId: parent.runId, incarnation: parent.incarnation };
      const rootRecord = runs.get(root.runId)?.record;
      const parentRecord = runs.get(parent.runId)?.record;
      const current =
        rootRecord?.incarnation === root.incarnation &&
        rootRecord.epoch === parent.epoch &&
        rootRecord.owner === parent.owner &&
        parentRecord?.epoch === parent.epoch;
      if (!current || record.epoch > parent.epoch) return undefined;
      record.epoch = parent.epoch;
      record.updatedAt = clock.now();
      return {
        runId: childRunId,
        incarnation: record.incarnation,
        owner: parent.owner,
        epoch: parent.epoch,
        leaseUntil: parent.leaseUntil,
        root,
      };
    },

    async release(lease) {
      const record = runs.get(lease.runId)?.record;
      if (
        record === undefined ||
        lease.root !== undefined ||
        record.incarnation !== lease.incarnation ||
        record.epoch !== lease.epoch ||
        record.owner !== lease.owner
      )
        return;
      record.owner = null;
      record.leaseUntil = null;
      notify();
    },
  };
}

/** A checkpoint without the stream chunks it carried: what is kept of it. */
function withoutStream({ stream: _stream, ...checkpoint }: Checkpoint): Checkpoint {
  return checkpoint;
}
