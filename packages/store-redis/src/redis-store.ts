import { randomBytes } from 'node:crypto';
import {
  CairnError,
  claimableStatuses,
  LeaseLostError,
  RunNotFoundError,
  terminalStatuses,
  type ClaimableOptions,
  type DurableStore,
  type Lease,
  type RunFilter,
  type RunRecord,
  type RunStatus,
} from '@cairn/sdk';
import type { Cluster, Redis } from 'ioredis';
import { Gate, type RedisClient } from './client.js';
import { Holdings } from './holdings.js';
import { indexedIds, moveInIndexes, statusList } from './indexes.js';
import { keySpace, type KeySpace } from './keys.js';
import { acquireLease } from './lua/acquire.js';
import { adoptRun } from './lua/adopt.js';
import { appendJournal } from './lua/append.js';
import { createRun } from './lua/create.js';
import { deleteRun } from './lua/delete.js';
import { loadRun } from './lua/load.js';
import { releaseLease } from './lua/release.js';
import { renewLease } from './lua/renew.js';
import { requestCancel } from './lua/request-cancel.js';
import { saveCheckpoint } from './lua/save.js';
import { updateRunStatus } from './lua/update-status.js';
import { hashFields, toJournal, toRecord } from './record.js';

/** Options of `redisStore`. */
export interface RedisStoreOptions {
  /** An ioredis `Redis` or `Cluster` the caller owns and closes; the store never quits it. */
  client: RedisClient;
  /** Prefix of every key the store writes; must hold no `{` or `}`. @defaultValue 'cairn' */
  prefix?: string;
  /**
   * Once a run reaches a final status (completed, failed, cancelled, dead-lettered) its keys expire after this
   * many milliseconds; a run that leaves the final status is kept again. @defaultValue undefined (kept until
   * deleted or pruned)
   */
  settledTtlMs?: number;
  /** How long one call waits for the client to be ready and Redis to answer before `STORE_UNAVAILABLE`. @defaultValue 10000 */
  timeoutMs?: number;
}

/** What `prune` deletes. */
export interface PruneOptions {
  /** Runs last updated before this instant (a `Date` or milliseconds since the epoch). */
  olderThan: Date | number;
  /** Only runs in these statuses. @defaultValue the final statuses */
  status?: RunStatus | readonly RunStatus[];
}

/** A `DurableStore` on Redis, with retention and a `close` for the connections its subscriptions opened. */
export interface RedisStore extends DurableStore, AsyncDisposable {
  /** The key prefix this store uses. */
  readonly prefix: string;
  /** Deletes runs last updated before `olderThan`, never one with a live lease; returns how many. */
  prune(options: PruneOptions): Promise<number>;
  /** Ends the connections `subscribe` opened. Leaves `client` open. */
  close(): Promise<void>;
}

type Reply = [string, ...unknown[]];
const pageSize = 200;

function refusal(runId: string, epoch: number, reason: string): LeaseLostError {
  if (reason === 'missing') return new LeaseLostError(runId, epoch, 'the run no longer exists');
  if (reason === 'late')
    return new LeaseLostError(runId, epoch, 'its lease ran out before the write reached Redis');
  return new LeaseLostError(runId, epoch);
}

const json = (value: unknown) => (value === undefined ? '' : JSON.stringify(value));
const nonce = () => randomBytes(8).toString('hex');

/**
 * Creates a store on Redis over the caller's ioredis client (standalone, Sentinel or Cluster). Every write is
 * a Lua script fenced by the lease epoch; all of a run's keys share the hash tag of its id.
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  const keys: KeySpace = keySpace(options.prefix ?? 'cairn');
  const timeoutMs = options.timeoutMs ?? 10_000;
  const gate = new Gate(options.client, keys.prefix, timeoutMs);
  const settledTtl =
    options.settledTtlMs === undefined ? '' : String(Math.max(1, Math.ceil(options.settledTtlMs)));
  const holdings = new Holdings();
  const subscribers = new Set<RedisClient>();
  // On a single node the scripts update the status indexes themselves; on Cluster the store does, after.
  const cluster = gate.isCluster;

  const runKeys = (runId: string, indexed = true): string[] => {
    const k = keys.run(runId);
    return indexed && !cluster
      ? [k.run, k.journal, k.lease, ...keys.indexes()]
      : [k.run, k.journal, k.lease];
  };
  const script = async (
    operation: string,
    lua: Parameters<Gate['script']>[1],
    runId: string,
    args: string[],
  ) => (await gate.script(operation, lua, runKeys(runId), args)) as Reply;

  async function fenced(
    operation: string,
    lua: Parameters<Gate['script']>[1],
    runId: string,
    epoch: number,
    args: string[],
    status?: RunStatus,
  ): Promise<void> {
    const { token, deadline } = holdings.fence(runId, epoch);
    const reply = await script(operation, lua, runId, [
      String(epoch),
      token,
      deadline,
      settledTtl,
      ...args,
    ]);
    if (reply[0] !== 'ok') throw refusal(runId, epoch, reply[0]);
    if (cluster && status !== undefined && reply[1] !== status) {
      await moveInIndexes(gate, keys, runId, status, String(reply[2]));
    }
  }

  async function readRecords(ids: string[]): Promise<(RunRecord | undefined)[]> {
    return Promise.all(
      ids.map(async (id) => {
        const fields = hashFields(
          await gate.call('read a run', (client) => client.hgetall(keys.run(id).run)),
        );
        return fields.size === 0 ? undefined : toRecord(fields);
      }),
    );
  }

  /** Records from the indexes of `statuses`, oldest first, that pass `keep`, up to `limit`. */
  async function scan(
    statuses: readonly RunStatus[],
    keep: (record: RunRecord) => boolean,
    limit: number,
  ): Promise<RunRecord[]> {
    const found: RunRecord[] = [];
    if (limit <= 0 || statuses.length === 0) return found;
    let batch: string[] = [];
    const flush = async () => {
      for (const record of await readRecords(batch)) {
        if (
          record !== undefined &&
          statuses.includes(record.status) &&
          keep(record) &&
          found.length < limit
        )
          found.push(record);
      }
      batch = [];
    };
    for await (const id of indexedIds(gate, keys, statuses, pageSize)) {
      batch.push(id);
      if (batch.length >= Math.min(pageSize, limit - found.length)) await flush();
      if (found.length >= limit) return found;
    }
    await flush();
    return found;
  }

  async function serverNow(): Promise<number> {
    const [seconds, micros] = await gate.call('read the server clock', (client) => client.time());
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  const store: RedisStore = {
    prefix: keys.prefix,

    async create(init) {
      const status = init.status ?? 'running';
      const reply = await script('create a run', createRun, init.runId, [
        init.runId,
        init.kind,
        init.name,
        init.signature,
        JSON.stringify(init.snapshot),
        status,
        keys.channel,
      ]);
      const fields = hashFields(reply[1]);
      const run = toRecord(fields);
      if (cluster)
        await moveInIndexes(gate, keys, init.runId, run.status, fields.get('order') ?? '0');
      return { created: reply[0] === 'created', run };
    },

    async load(runId) {
      const reply = (await gate.script('load a run', loadRun, runKeys(runId, false), [])) as Reply;
      if (reply[0] !== 'ok') return undefined;
      return { run: toRecord(hashFields(reply[1])), journal: toJournal(reply[2]) };
    },

    save: (runId, epoch, checkpoint) =>
      fenced(
        'save a checkpoint',
        saveCheckpoint,
        runId,
        epoch,
        [
          checkpoint.status,
          checkpoint.signature,
          JSON.stringify(checkpoint.snapshot),
          json(checkpoint.output),
          json(checkpoint.error),
        ],
        checkpoint.status,
      ),

    append: (runId, epoch, entries) =>
      fenced(
        'append to the journal',
        appendJournal,
        runId,
        epoch,
        entries.flatMap((entry) => [String(entry.seq), JSON.stringify(entry)]),
      ),

    updateStatus: (runId, epoch, update) =>
      fenced(
        'update a status',
        updateRunStatus,
        runId,
        epoch,
        [update.status, json(update.error)],
        update.status,
      ),

    list: (filter: RunFilter = {}) =>
      scan(
        statusList(filter.status),
        (record) =>
          (filter.kind === undefined || record.kind === filter.kind) &&
          (filter.name === undefined || record.name === filter.name),
        filter.limit ?? Number.POSITIVE_INFINITY,
      ),

    async delete(runId) {
      const reply = await script('delete a run', deleteRun, runId, []);
      if (cluster) await moveInIndexes(gate, keys, runId, undefined, '0');
      return reply[0] === 'deleted';
    },

    async requestCancel(runId) {
      const flagged = await gate.script(
        'request a cancellation',
        requestCancel,
        runKeys(runId, false),
        [],
      );
      return flagged === 1;
    },

    async prune({ olderThan, status = terminalStatuses }) {
      const before = String(typeof olderThan === 'number' ? olderThan : olderThan.getTime());
      const statuses = statusList(status);
      const ids: string[] = [];
      // Collected first: deleting while paging through a sorted set would shift the pages.
      for await (const id of indexedIds(gate, keys, statuses, pageSize)) ids.push(id);
      let deleted = 0;
      for (let i = 0; i < ids.length; i += pageSize) {
        const replies = await Promise.all(
          ids.slice(i, i + pageSize).map(async (id) => {
            // A run whose keys expired (settledTtlMs) left its index entry behind: the script drops it on a
            // single node, the store on Cluster.
            const reply = await script('prune runs', deleteRun, id, [before, id, ...statuses]);
            if (cluster && reply[0] !== 'kept') await moveInIndexes(gate, keys, id, undefined, '0');
            return reply[0];
          }),
        );
        deleted += replies.filter((reply) => reply === 'deleted').length;
      }
      return deleted;
    },

    async acquire(runId, { owner, ttlMs, reclaimOwn }) {
      if (!(ttlMs > 0))
        throw new CairnError('INVALID_ARGUMENT', `ttlMs must be positive, got ${ttlMs}.`);
      const reply = await script('claim a run', acquireLease, runId, [
        owner,
        String(Math.ceil(ttlMs)),
        nonce(),
        reclaimOwn === true ? '1' : '0',
      ]);
      if (reply[0] === 'missing') throw new RunNotFoundError(runId);
      if (reply[0] !== 'ok') return undefined;
      const [, epoch, leaseUntil, recoveries, cancel, token] = reply.map(String);
      const lease: Lease = {
        runId,
        owner,
        epoch: Number(epoch),
        leaseUntil: Number(leaseUntil),
        recoveries: Number(recoveries),
        cancelRequested: cancel === '1',
      };
      holdings.set(runId, { epoch: lease.epoch, token: token ?? '', until: lease.leaseUntil });
      return lease;
    },

    async renew(lease, ttlMs) {
      if (!(ttlMs > 0))
        throw new CairnError('INVALID_ARGUMENT', `ttlMs must be positive, got ${ttlMs}.`);
      const held = holdings.get(lease.runId, lease.epoch);
      const deadline = Math.max(lease.leaseUntil, held?.until ?? 0);
      const reply = await script('renew a lease', renewLease, lease.runId, [
        held?.token ?? '',
        String(lease.epoch),
        lease.owner,
        String(Math.ceil(ttlMs)),
        String(deadline),
      ]);
      // A lost lease stays in `holdings`: the holder's later writes keep carrying its token and are refused,
      // even when lost data makes the same epoch number come round again.
      if (reply[0] !== 'ok') {
        throw reply[0] === 'late'
          ? new LeaseLostError(
              lease.runId,
              lease.epoch,
              'the renewal reached Redis after the lease ran out',
            )
          : new LeaseLostError(lease.runId, lease.epoch);
      }
      const leaseUntil = Number(reply[1]);
      holdings.renewed(lease.runId, lease.epoch, leaseUntil);
      return { ...lease, leaseUntil, cancelRequested: String(reply[2]) === '1' };
    },

    async release(lease) {
      const token = holdings.get(lease.runId, lease.epoch)?.token ?? '';
      await script('release a lease', releaseLease, lease.runId, [
        String(lease.epoch),
        lease.owner,
        token,
        keys.channel,
      ]);
      holdings.forget(lease.runId, lease.epoch);
    },

    async adopt(childRunId, parent) {
      const held = holdings.get(parent.runId, parent.epoch);
      const token = held?.token ?? `${parent.epoch}:${nonce()}:${parent.owner}`;
      const until = Math.max(parent.leaseUntil, held?.until ?? 0);
      const reply = await script('adopt a child run', adoptRun, childRunId, [
        String(parent.epoch),
        parent.owner,
        String(until),
        token,
        String(until),
      ]);
      if (reply[0] === 'missing') throw new RunNotFoundError(childRunId);
      if (reply[0] === 'newer') return undefined;
      if (reply[0] !== 'ok') {
        throw new LeaseLostError(
          parent.runId,
          parent.epoch,
          'its lease ran out before the adoption reached Redis',
        );
      }
      holdings.set(childRunId, { epoch: parent.epoch, token, until, parent: parent.runId });
      return {
        runId: childRunId,
        owner: parent.owner,
        epoch: parent.epoch,
        leaseUntil: parent.leaseUntil,
      };
    },

    async claimable({ limit, definitions, reclaimOwner }: ClaimableOptions) {
      if (definitions.length === 0 || limit <= 0) return [];
      const now = await serverNow();
      const runs = await scan(
        claimableStatuses,
        (record) =>
          definitions.some((d) => d.kind === record.kind && d.name === record.name) &&
          (record.owner === null ||
            record.leaseUntil === null ||
            record.leaseUntil <= now ||
            (reclaimOwner !== undefined && record.owner === reclaimOwner)),
        limit,
      );
      return runs.map((run) => run.runId);
    },

    async subscribe(onWork) {
      const client = options.client;
      const subscriber: RedisClient = client.isCluster
        ? (client as Cluster).duplicate()
        : (client as Redis).duplicate();
      subscribers.add(subscriber);
      const end = async () => {
        subscribers.delete(subscriber);
        subscriber.disconnect();
      };
      subscriber.on('error', () => undefined);
      subscriber.on('message', (channel: string) => {
        if (channel === keys.channel) onWork();
      });
      try {
        await new Gate(subscriber, keys.prefix, timeoutMs).call('listen for work', (sub) =>
          sub.subscribe(keys.channel),
        );
      } catch (error) {
        await end();
        throw error;
      }
      return end;
    },

    async close() {
      for (const subscriber of subscribers) subscriber.disconnect();
      subscribers.clear();
    },
    [Symbol.asyncDispose]: () => store.close(),
  };

  return store;
}
