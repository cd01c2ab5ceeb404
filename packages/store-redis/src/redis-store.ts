import {
  CairnError,
  checkRunWait,
  LeaseHeldError,
  RunNotFoundError,
  terminalStatuses,
  type ClaimableOptions,
  type DurableStore,
  type Fence,
  type RunFilter,
  type RunRecord,
  type RunStatus,
  type SaveReceipt,
} from '@cairn/sdk';
import type { Cluster, Redis } from 'ioredis';
import { deleteChildren, deleteTree, linkToParent, rootCurrent, toRecords } from './children.js';
import { Gate, type LuaScript, type RedisClient } from './client.js';
import { runScript, scriptKeys, type Reply, type StoreContext } from './context.js';
import { refusal } from './refusal.js';
import { Holdings } from './holdings.js';
import { claimableIds } from './claimable.js';
import { indexedIds, statusIndexKeys, statusList } from './indexes.js';
import { keySpace } from './keys.js';
import { holdsLegacyLayout, legacyLayoutError, migrateKeyLayout } from './legacy-layout.js';
import { leaseOperations, nonce } from './leases.js';
import { appendJournal } from './lua/append.js';
import { createRun } from './lua/create.js';
import { loadRun } from './lua/load.js';
import { requestCancel } from './lua/request-cancel.js';
import { saveCheckpoint } from './lua/save.js';
import { updateRunStatus } from './lua/update-status.js';
import { hashFields, toJournal, toRecord } from './record.js';
import { checkpointWait, consumedArg, toSignals, waitArgs, waitOperations } from './waits.js';

/** Options of `redisStore`. */
export interface RedisStoreOptions {
  /** An ioredis `Redis` or `Cluster` the caller owns and closes; the store never quits it. */
  client: RedisClient;
  /** Prefix of every key the store writes; must hold no `{` or `}`. @defaultValue 'cairn' */
  prefix?: string;
  /**
   * Once a run reaches a final status (completed, failed, cancelled, dead-lettered) its keys expire after this
   * many milliseconds. @defaultValue undefined (kept until deleted or pruned)
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

/** What `migrateKeyLayout` moves besides the runs the old indexes name. */
export interface MigrateKeyLayoutOptions {
  /** Ids of runs to move even if no old index names them. @defaultValue [] */
  runIds?: Iterable<string>;
}

/** A `DurableStore` on Redis, with retention and a `close` for the connections its subscriptions opened. */
export interface RedisStore extends DurableStore, AsyncDisposable {
  /** The key prefix this store uses. */
  readonly prefix: string;
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
  /** Ends the connections `subscribe` opened. Leaves `client` open. */
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
  const ctx: StoreContext = { gate, keys, cluster: gate.isCluster, holdings: new Holdings() };
  const { cluster, holdings } = ctx;
  const settledTtl =
    options.settledTtlMs === undefined ? '' : String(Math.max(1, Math.ceil(options.settledTtlMs)));
  const subscribers = new Set<RedisClient>();
  const leases = leaseOperations(ctx, keys.channel);
  const waits = waitOperations(ctx, layoutCurrent);

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

  /** Runs a fenced write; throws its refusal unless the reply's word is `ok` or one of `accepted`. */
  async function fenced(
    operation: string,
    lua: LuaScript,
    fence: Fence,
    args: string[],
    accepted: readonly string[] = [],
  ): Promise<Reply> {
    // A child's write must find its root still at the fence's epoch. A single node checks it in the write's
    // script; on Cluster the root is in another slot and is read just before, and a holder frozen between
    // the read and the write is refused by its deadline.
    const { root } = fence;
    if (root !== undefined && cluster && !(await rootCurrent(ctx, root, fence.epoch)))
      throw refusal(fence, ['root']);
    const { token, deadline } = holdings.fence(fence);
    const rootHash = root === undefined ? undefined : keys.run(root.runId).run;
    const reply = await runScript(
      ctx,
      operation,
      lua,
      fence.runId,
      [
        String(fence.epoch),
        token,
        deadline,
        settledTtl,
        fence.incarnation,
        root?.incarnation ?? '',
        ...args,
      ],
      rootHash === undefined ? undefined : [rootHash, rootHash],
    );
    if (reply[0] !== 'ok' && !accepted.includes(reply[0])) throw refusal(fence, reply);
    return reply;
  }

  async function readHashes(ids: string[]): Promise<Map<string, string>[]> {
    return Promise.all(
      ids.map(async (id) =>
        hashFields(await gate.call('read a run', (client) => client.hgetall(keys.run(id).run))),
      ),
    );
  }

  /** Records from the indexes of `statuses`, oldest first, that pass `keep`, up to `limit`. */
  async function scan(
    statuses: readonly RunStatus[],
    keep: (record: RunRecord) => boolean,
    limit: number,
  ): Promise<RunRecord[]> {
    await layoutCurrent();
    const found: Map<string, string>[] = [];
    if (limit <= 0 || statuses.length === 0) return [];
    let batch: string[] = [];
    const flush = async () => {
      for (const fields of await readHashes(batch)) {
        if (fields.size === 0 || found.length >= limit) continue;
        const record = toRecord(fields);
        if (statuses.includes(record.status) && keep(record)) found.push(fields);
      }
      batch = [];
    };
    const indexes = statusIndexKeys(keys, statuses);
    for await (const id of indexedIds(gate, indexes, pageSize, Math.min(pageSize, limit))) {
      batch.push(id);
      if (batch.length >= Math.min(pageSize, limit - found.length)) await flush();
      if (found.length >= limit) break;
    }
    await flush();
    return toRecords(ctx, found);
  }

  const store: RedisStore = {
    prefix: keys.prefix,

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
      const [run] = await toRecords(ctx, [hashFields(reply[1])]);
      return {
        run: run!,
        journal: toJournal(reply[2], runId),
        signals: toSignals(reply[3], runId),
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
      if (update.status === 'waiting') {
        throw new CairnError(
          'INVALID_ARGUMENT',
          'A run starts waiting with a checkpoint, not a status change.',
          { data: { runId: fence.runId } },
        );
      }
      await fenced('update a status', updateRunStatus, fence, [update.status, json(update.error)]);
    },

    list: (filter: RunFilter = {}) =>
      scan(
        statusList(filter.status),
        (record) =>
          (filter.kind === undefined || record.kind === filter.kind) &&
          (filter.name === undefined || record.name === filter.name),
        filter.limit ?? Number.POSITIVE_INFINITY,
      ),

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
      for await (const id of indexedIds(gate, statusIndexKeys(keys, statuses), pageSize))
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
