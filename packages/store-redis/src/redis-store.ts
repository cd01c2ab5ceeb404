import { randomUUID } from 'node:crypto';
import {
  CairnError,
  checkRunWait,
  LeaseHeldError,
  RunNotFoundError,
  terminalStatuses,
  type ClaimableOptions,
  type DurableStore,
  type RunFilter,
  type SaveReceipt,
  type StreamStore,
} from '@cairn/sdk';
import type { Cluster, Redis } from 'ioredis';
import { deleteChildren, deleteTree, linkToParent, toRecords } from './children.js';
import { Gate, type RedisClient } from './client.js';
import { runScript, scriptKeys, type StoreContext } from './context.js';
import { Holdings } from './holdings.js';
import { claimableIds } from './claimable.js';
import { indexedIds, statusIndexKeys, statusList } from './indexes.js';
import { keySpace } from './keys.js';
import { listRuns } from './listing.js';
import { Liveness } from './liveness.js';
import type { MigrateKeyLayoutOptions, PruneOptions, RedisStoreOptions } from './options.js';
import { holdsLegacyLayout, legacyLayoutError, migrateKeyLayout } from './legacy-layout.js';
import { fencedWrites } from './fenced.js';
import { leaseOperations, nonce } from './leases.js';
import { appendJournal } from './lua/append.js';
import { createRun } from './lua/create.js';
import { loadRun } from './lua/load.js';
import { requestCancel } from './lua/request-cancel.js';
import { saveCheckpoint } from './lua/save.js';
import { updateRunStatus } from './lua/update-status.js';
import { hashFields, toJournal } from './record.js';
import { payloadOperations } from './payloads.js';
import { streamOperations } from './streams.js';
import { checkpointWait, consumedArg, toSignals, waitArgs, waitOperations } from './waits.js';

/**
 * A `DurableStore` on Redis with runs' stream logs, retention and a `close` for the connections its
 * subscriptions opened.
 */
export interface RedisStore extends DurableStore, AsyncDisposable {
  /** Appends to a run's stream log under the fence (see `StreamStore`). */
  appendStream: StreamStore['appendStream'];
  /** Reads a run's stream log from a position (see `StreamStore`). */
  readStream: StreamStore['readStream'];
  /** The highest position in a run's stream log (see `StreamStore`). */
  streamPosition: StreamStore['streamPosition'];
  /** Every signal payload the store keeps for a run: its unconsumed signals and its standing decisions. */
  signalPayloads: NonNullable<DurableStore['signalPayloads']>;
  /** Replaces encoded payload strings wherever the run keeps them, in one script (see `DurableStore`). */
  replacePayloads: NonNullable<DurableStore['replacePayloads']>;
  /** The key prefix this store uses. */
  readonly prefix: string;
  /**
   * This store instance's id: a run it holds names it as its `holder` (in the run's hash), and its liveness is
   * kept under it.
   */
  readonly instance: string;
  /**
   * Deletes runs last updated before `olderThan` with their child runs, never one a live lease holds; returns
   * how many.
   */
  prune(options: PruneOptions): Promise<number>;
  /**
   * Moves the runs stored in the key layout before buckets (global `index:<status>` sets) into their buckets,
   * a page at a time, with `runIds` too (a run that layout's lost index step left in no index). Run it while no
   * worker runs; it is idempotent and resumable after a crash. Until it has run, the store's calls fail with
   * `SCHEMA_MISMATCH`. Returns how many runs it moved.
   */
  migrateKeyLayout(options?: MigrateKeyLayoutOptions): Promise<number>;
  /**
   * Ends the connections `subscribe` opened and the instance's liveness: what it still holds is taken over by
   * other instances once the takeover grace passed, and its later claims run by their leases alone. Leaves
   * `client` open.
   */
  close(): Promise<void>;
}

const pageSize = 200;

const json = (value: unknown) => (value === undefined ? '' : JSON.stringify(value));

/**
 * Creates a store on Redis over the caller's ioredis client (standalone, Sentinel or Cluster). Every write is
 * a Lua script fenced by the run's incarnation and lease epoch; all of a run's keys share the hash tag of its
 * id.
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  const keys = keySpace(options.prefix ?? 'cairn');
  const timeoutMs = options.timeoutMs ?? 10_000;
  const gate = new Gate(options.client, keys.prefix, timeoutMs);
  const instance = randomUUID();
  const holdings = new Holdings();
  const liveness =
    options.liveness === 'lease'
      ? undefined
      : new Liveness({
          instance,
          gate,
          keys,
          holdings,
          graceMs: Math.max(0, options.takeoverGraceMs ?? 3_000),
        });
  const ctx: StoreContext = { gate, keys, cluster: gate.isCluster, holdings, liveness };
  const { cluster } = ctx;
  const settledTtl =
    options.settledTtlMs === undefined ? '' : String(Math.max(1, Math.ceil(options.settledTtlMs)));
  const subscribers = new Set<RedisClient>();
  const leases = leaseOperations(ctx, keys.channel);
  const waits = waitOperations(ctx, layoutCurrent);
  const fenced = fencedWrites(ctx, settledTtl);
  const streams = streamOperations(ctx, fenced, layoutCurrent);
  const payloads = payloadOperations(ctx, layoutCurrent);

  // Runs left in the layout before buckets would be invisible here: the first call of this instance looks for
  // that layout's indexes once and refuses to go on while they exist.
  let checkedLayout: Promise<void> | undefined;
  function layoutCurrent(): Promise<void> {
    checkedLayout ??= holdsLegacyLayout(ctx).then((legacy) => {
      if (legacy) throw legacyLayoutError(keys.prefix);
    });
    checkedLayout.catch(() => (checkedLayout = undefined));
    return checkedLayout;
  }

  const store: RedisStore = {
    prefix: keys.prefix,
    instance,

    async create(init) {
      await layoutCurrent();
      const { parent } = init;
      const status = init.status ?? 'running';
      const wait = status === 'waiting' ? checkRunWait(init.wait as never) : null;
      // On Cluster the parent is checked, and learns of its child, in its own slot first.
      const root =
        parent !== undefined && cluster ? await linkToParent(ctx, init.runId, parent) : ['', ''];
      const parentKeys = parent === undefined ? undefined : keys.run(parent.runId);
      const reply = await runScript(
        ctx,
        'create a run',
        createRun,
        init.runId,
        [
          init.runId,
          init.kind,
          init.name,
          init.signature,
          JSON.stringify(init.snapshot),
          status,
          keys.channel,
          nonce(),
          parent?.runId ?? '',
          parent?.incarnation ?? '',
          ...root,
          ...waitArgs(wait),
        ],
        parentKeys === undefined ? undefined : [parentKeys.run, parentKeys.children],
      );
      if (reply[0] === 'missing') throw new RunNotFoundError(parent?.runId ?? init.runId);
      const fields = hashFields(reply[1]);
      const [run] = await toRecords(ctx, [fields]);
      if (reply[0] === 'created') {
        // A child left by an earlier incarnation of the parent was replaced: its own children go too.
        if (reply[2] !== '') await deleteChildren(ctx, init.runId, String(reply[2]), reply[3]);
      }
      return { created: reply[0] === 'created', run: run! };
    },

    async load(runId) {
      await layoutCurrent();
      const reply = await runScript(ctx, 'load a run', loadRun, runId, []);
      if (reply[0] !== 'ok') return undefined;
      const fields = hashFields(reply[1]);
      const [run] = await toRecords(ctx, [fields]);
      const checkpointSeq = fields.get('checkpointSeq');
      return {
        run: run!,
        journal: toJournal(reply[2], runId),
        signals: toSignals(reply[3], runId),
        ...(checkpointSeq === undefined ? {} : { checkpointSeq: Number(checkpointSeq) }),
      };
    },

    async save(fence, checkpoint): Promise<SaveReceipt> {
      const wait = checkpointWait(fence, checkpoint);
      const reply = await fenced(
        'save a checkpoint',
        saveCheckpoint,
        fence,
        [
          checkpoint.status,
          checkpoint.signature,
          JSON.stringify(checkpoint.snapshot),
          json(checkpoint.output),
          json(checkpoint.error),
          String(checkpoint.journalSeq),
          ...waitArgs(wait),
          consumedArg(checkpoint.signalsConsumed),
          checkpoint.release === true ? '1' : '',
          keys.channel,
          checkpoint.unlessMail === true ? '1' : '',
        ],
        ['mail'],
      );
      // {'mail'}: kept out by `unlessMail`; {'ok', 1 | 0}: written, with or without mail above the cursor.
      if (reply[0] === 'mail') return { written: false, mail: true };
      return { written: true, mail: Number(reply[1]) === 1 };
    },

    async append(fence, entries) {
      await fenced(
        'append to the journal',
        appendJournal,
        fence,
        entries.flatMap((entry) => [String(entry.seq), JSON.stringify(entry)]),
      );
    },

    async updateStatus(fence, update) {
      const reply = await fenced(
        'update a status',
        updateRunStatus,
        fence,
        [
          update.status,
          json(update.error),
          update.stalls === undefined ? '' : String(update.stalls),
        ],
        ['not-waiting'],
      );
      if (reply[0] === 'not-waiting') {
        throw new CairnError(
          'INVALID_ARGUMENT',
          `Run "${fence.runId}" is ${String(reply[1])}: a run starts waiting with a checkpoint, not a status change.`,
          { data: { runId: fence.runId } },
        );
      }
    },

    async list(filter: RunFilter = {}) {
      await layoutCurrent();
      return listRuns(ctx, filter, pageSize);
    },

    async delete(runId) {
      await layoutCurrent();
      const outcome = await deleteTree(ctx, runId, { mode: 'delete' });
      if (outcome === 'held') throw new LeaseHeldError(runId);
      return outcome === 'deleted';
    },

    async requestCancel(runId) {
      const flagged = await gate.script(
        'request a cancellation',
        requestCancel,
        scriptKeys(ctx, runId),
        [keys.channel],
      );
      return flagged === 1;
    },

    async prune({ olderThan, status = terminalStatuses }) {
      await layoutCurrent();
      const before = String(typeof olderThan === 'number' ? olderThan : olderThan.getTime());
      const statuses = statusList(status);
      const ids: string[] = [];
      // Collected first: deleting while paging through a sorted set would shift the pages.
      for await (const id of indexedIds(gate, statusIndexKeys(keys, statuses), { pageSize }))
        ids.push(id);
      let deleted = 0;
      for (let i = 0; i < ids.length; i += pageSize) {
        // A run whose keys expired (settledTtlMs) left its index entry behind: pruning drops it.
        const outcomes = await Promise.all(
          ids
            .slice(i, i + pageSize)
            .map((id) => deleteTree(ctx, id, { mode: 'prune', before, statuses })),
        );
        deleted += outcomes.filter((outcome) => outcome === 'deleted').length;
      }
      return deleted;
    },

    ...waits,
    ...payloads,
    ...streams,
    ...leases,
    async acquire(runId, options) {
      await layoutCurrent();
      return leases.acquire(runId, options);
    },

    async claimable(options: ClaimableOptions) {
      await layoutCurrent();
      return claimableIds(ctx, options);
    },

    async migrateKeyLayout({ runIds }: MigrateKeyLayoutOptions = {}) {
      const moved = await migrateKeyLayout(ctx, pageSize, runIds);
      checkedLayout = undefined;
      return moved;
    },

    async subscribe(onWork) {
      // A killed holder announces nothing: the liveness tells when its grace ends.
      const stopTakeovers = liveness?.onTakeover(onWork);
      const client = options.client;
      const subscriber: RedisClient = client.isCluster
        ? (client as Cluster).duplicate()
        : (client as Redis).duplicate();
      subscribers.add(subscriber);
      const end = async () => {
        stopTakeovers?.();
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
      await liveness?.close();
    },
    [Symbol.asyncDispose]: () => store.close(),
  };

  return store;
}
