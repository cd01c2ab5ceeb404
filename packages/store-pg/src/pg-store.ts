import { randomUUID } from 'node:crypto';
import {
  CairnError,
  checkReplacements,
  checkRunWait,
  checkStreamChunks,
  notAChildError,
  RunNotFoundError,
  streamReadAfter,
  streamReadLimit,
  terminalStatuses,
  type Checkpoint,
  type DurableStore,
  type Fence,
  type NewRun,
  type RunStatus,
  type StreamStore,
} from '@cairn/sdk';
import postgres, { type Options } from 'postgres';
import type { AnySql } from './db.js';
import { toStoreError } from './errors.js';
import { Leases } from './leases.js';
import { checkSchema, migrate, renderMigrationSql } from './migrations.js';
import { schemaNames, type Names } from './names.js';
import { LivenessSession } from './session.js';
import { adoptRun } from './sql/adopt-run.js';
import { claimableRuns } from './sql/claimable-runs.js';
import { deleteRun } from './sql/delete-run.js';
import { listRuns } from './sql/list-runs.js';
import { loadRun } from './sql/load-run.js';
import { moveRuns } from './sql/move-runs.js';
import { nextWake } from './sql/next-wake.js';
import { pruneRuns } from './sql/prune-runs.js';
import { readMailbox } from './sql/read-mailbox.js';
import { readStream } from './sql/read-stream.js';
import { replacePayloads } from './sql/replace-payloads.js';
import { requestCancel } from './sql/request-cancel.js';
import { sendSignal } from './sql/send-signal.js';
import { signalPayloads } from './sql/signal-payloads.js';
import { streamPosition } from './sql/stream-position.js';
import { updateStatus } from './sql/update-status.js';
import { BatchedWrites } from './writes.js';

/** Options of `pgStore`. */
export interface PgStoreOptions {
  /** A `postgres()` instance the caller owns and ends; the store never ends it. */
  sql: AnySql;
  /** The schema holding the store's tables. @defaultValue 'cairn' */
  schema?: string;
  /**
   * How a holder's liveness is known. `session`: the store keeps one connection of its own holding an
   * advisory lock, so a crashed holder's runs are taken over as soon as its session is gone. `lease`: no
   * session (for a transaction-pooling proxy, where session locks do not last); a crashed holder's runs are
   * taken over when their leases run out. @defaultValue 'session'
   */
  liveness?: 'session' | 'lease';
  /**
   * Connection options of the store's own one-connection instance that holds its liveness lock; set it to
   * reach Postgres directly when `sql` goes through a transaction-pooling proxy.
   * @defaultValue the host, port, database, user, password and ssl settings of `sql.options`
   */
  lockConnection?: Options<Record<string, never>>;
  /** How long opening the session, or a keepalive on it, may take before it is taken as lost. @defaultValue 10000 */
  lockTimeoutMs?: number;
  /** How often the session is checked (and reopened at once after a loss). @defaultValue 2000 */
  keepaliveMs?: number;
  /**
   * How long a claimer waits, once it found another instance's session gone (and that instance has no other),
   * before taking its runs; and, after its own session reopened, before taking any other instance's: after a
   * failover, every instance takes its own runs back first. Every claim path keeps it: a worker's batch claim and
   * `acquire` (execute, resume, a client's cancel), so a holder whose connection only blipped keeps its runs.
   * @defaultValue 3000
   */
  takeoverGraceMs?: number;
}

/** What `prune` deletes. */
export interface PruneOptions {
  /** Runs last updated before this instant (a `Date` or milliseconds since the epoch). */
  olderThan: Date | number;
  /** Only runs in these statuses. @defaultValue ['completed', 'failed', 'cancelled'] */
  status?: RunStatus | readonly RunStatus[];
}

/** A `DurableStore` on Postgres, with migrations, retention and a `close` for its lock connection. */
export interface PgStore extends DurableStore, AsyncDisposable {
  /** The schema this store uses. */
  readonly schema: string;
  /** Applies pending migrations; safe to run from several processes at once. */
  migrate(): Promise<{ from: number; to: number }>;
  /** The SQL that creates the schema at this package's version, for users who migrate with their own tool. */
  migrationSql(): string;
  /** Deletes finished runs last updated before `olderThan`, never a leased one; returns how many. */
  prune(options: PruneOptions): Promise<number>;
  /**
   * Checks the schema and opens the liveness session (not in lease-only mode): throws `STORE_FAILED` for a session
   * connection behind a transaction-pooling proxy, as the first claim would. A worker calls it from `start()`.
   */
  prepare(): Promise<void>;
  /** Appends to a run's stream log under the fence, in one statement with other runs' appends. */
  appendStream: StreamStore['appendStream'];
  /** The stream chunks a checkpoint or journal append carries are written in its statement. */
  readonly streamsWithWrites: true;
  /** Reads a run's stream log from a position. */
  readStream: StreamStore['readStream'];
  /** The highest position in a run's stream log, 0 when it has none. */
  streamPosition: StreamStore['streamPosition'];
  /** Every signal row the run keeps: its mailbox, consumed signals kept for their key, and its decisions. */
  signalPayloads: NonNullable<DurableStore['signalPayloads']>;
  /** Replaces payload strings wherever the run keeps them, in one statement under its row lock (no lease). */
  replacePayloads: NonNullable<DurableStore['replacePayloads']>;
  /** Ends the store's session: what it still holds is taken over by other workers. Leaves `sql` open. */
  close(): Promise<void>;
}

/** The SQL of every migration for `schema`, without a store or a connection. */
export function migrationSql(options: { schema?: string } = {}): string {
  return renderMigrationSql(schemaNames(options.schema ?? 'cairn'));
}

function lockOptionsFrom(sql: AnySql): Options<Record<string, never>> {
  const o = sql.options;
  return {
    host: o.host as unknown as string,
    port: o.port as unknown as number,
    ...(o.path ? { path: o.path } : {}),
    database: o.database,
    user: o.user,
    pass: o.pass ?? undefined,
    ssl: o.ssl,
    connect_timeout: o.connect_timeout,
    keep_alive: o.keep_alive,
    connection: { ...o.connection, application_name: 'cairn-session' },
    ...(o.target_session_attrs ? { target_session_attrs: o.target_session_attrs } : {}),
  } as unknown as Options<Record<string, never>>;
}

/** Refuses, before anything is written, a run created waiting without a wait the sdk accepts. */
function checkNewRun(init: NewRun): NewRun {
  if (init.status === 'waiting') checkRunWait(init.wait as never);
  return init;
}

/**
 * Refuses, before anything is written, a checkpoint that starts a wait without one the sdk accepts, or not
 * by the holder of the run's own lease giving it up: a waiting run holds no lease.
 */
function checkCheckpoint(fence: Fence, checkpoint: Checkpoint): void {
  if (checkpoint.status !== 'waiting') return;
  checkRunWait(checkpoint.wait as never);
  if (checkpoint.release !== true || fence.root !== undefined) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      'A wait is written by the holder of a run’s own lease, releasing it.',
      { data: { runId: fence.runId } },
    );
  }
}

/**
 * Creates a store on Postgres over the caller's `postgres()` instance. It never migrates by itself: until
 * `migrate()` (or `migrationSql()` applied by your tool) brings the schema to this version, every call fails
 * with `SCHEMA_MISMATCH` saying what to run.
 */
export function pgStore(options: PgStoreOptions): PgStore {
  const names: Names = schemaNames(options.schema ?? 'cairn');
  const sql: AnySql = options.sql;
  const instance = randomUUID();
  const session =
    options.liveness === 'lease'
      ? undefined
      : new LivenessSession({
          options: options.lockConnection ?? lockOptionsFrom(options.sql),
          timeoutMs: options.lockTimeoutMs ?? 10_000,
          keepaliveMs: options.keepaliveMs ?? 2_000,
          names,
          instance,
          onReopened: async (previous, current) => {
            await moveRuns(sql, names, previous, current);
          },
        });
  const graceMs = options.takeoverGraceMs ?? 3_000;
  const leases = new Leases({
    sql,
    names,
    session,
    instance,
    graceMs,
    // Sessions gone are looked for at most once a second, and at least twice per grace: a short grace (0 in
    // tests) means a claim right after a crash takes its runs, not one that finds the last probe too recent.
    probeMs: Math.min(1_000, graceMs / 2),
  });
  const writes = new BatchedWrites(sql, names);
  let ready: Promise<void> | undefined;

  /** Checks the schema version once; a failed check is tried again on the next call. */
  const ensureReady = (): Promise<void> => {
    if (ready === undefined) {
      const checking = checkSchema(sql, names);
      ready = checking;
      checking.catch(() => {
        if (ready === checking) ready = undefined;
      });
    }
    return ready;
  };

  async function run<T>(operation: string, body: () => Promise<T>, runId?: string): Promise<T> {
    await ensureReady();
    try {
      return await body();
    } catch (error) {
      throw toStoreError(error, operation, names.schema, runId);
    }
  }

  /** One fenced write: the statement decides; a refusal is `LeaseLostError`, never retried. */
  async function fenced(
    fence: Fence,
    operation: string,
    write: () => Promise<CairnError | undefined>,
  ): Promise<void> {
    const refused = await run(operation, write, fence.runId);
    if (refused !== undefined) throw refused;
  }

  /** The connection LISTEN goes through when the session connection is not `sql`'s. */
  let listening: ReturnType<typeof postgres> | undefined;
  const close = async () => {
    await session?.close();
    await listening?.end({ timeout: 0 }).catch(() => undefined);
  };

  const store: PgStore = {
    schema: names.schema,
    migrate: () => migrate(sql, names).finally(() => (ready = undefined)),
    migrationSql: () => renderMigrationSql(names),
    create: async (init) => run('create a run', () => writes.create(checkNewRun(init)), init.runId),
    load: (runId) =>
      run('load a run', async () => {
        const found = await loadRun(sql, names, runId);
        if (found === undefined) return undefined;
        // A run whose history rows were dropped is written in full next time, which mends them.
        if (found.stored.dropped) writes.storedItems.forget(runId);
        else writes.storedItems.rememberLoaded(runId, found.stored.version, found.stored.arrays);
        return found.loaded;
      }),
    streamsWithWrites: true,
    save: async (fence, checkpoint) => {
      checkCheckpoint(fence, checkpoint);
      checkStreamChunks(fence.runId, checkpoint.stream ?? []);
      const answer = await run(
        'save a checkpoint',
        () => writes.save(fence, checkpoint),
        fence.runId,
      );
      if (answer instanceof Error) throw answer; // a lost lease, or the gap its chunks would leave
      // A write unlessMail held gave nothing up: the lease is still held.
      if (answer.written && checkpoint.release === true) leases.releasedBySave(fence);
      return answer;
    },
    append: async (fence, entries, stream) => {
      checkStreamChunks(fence.runId, stream ?? []);
      await fenced(fence, 'append to the journal', () => writes.append(fence, entries, stream));
    },
    appendStream: async (fence, chunks) => {
      checkStreamChunks(fence.runId, chunks);
      await fenced(fence, 'append to the stream', () => writes.appendStream(fence, chunks));
    },
    readStream: async (runId, readOptions) => {
      const after = streamReadAfter(readOptions);
      const limit = streamReadLimit(readOptions);
      return run('read a stream', () => readStream(sql, names, runId, after, limit), runId);
    },
    streamPosition: (runId) =>
      run('read a stream position', () => streamPosition(sql, names, runId), runId),
    updateStatus: (fence, update) =>
      fenced(fence, 'update a status', () => updateStatus(sql, names, fence, update)),
    list: (filter = {}) => run('list runs', () => listRuns(sql, names, filter)),
    signal: (runId, signal) =>
      run('send a signal', () => sendSignal(sql, names, runId, signal), runId),
    mailbox: (runId) => run('read a mailbox', () => readMailbox(sql, names, runId), runId),
    signalPayloads: (runId) =>
      run('read signal payloads', () => signalPayloads(sql, names, runId), runId),
    // What this instance remembers of the run's long arrays stays right: the rows it would keep hold the same
    // payloads in other strings, and the snapshot version does not move (see 000010_replace_payloads.sql).
    replacePayloads: async (runId, incarnation, replacements) => {
      checkReplacements(runId, replacements);
      return run(
        'replace payloads',
        () => replacePayloads(sql, names, runId, incarnation, replacements),
        runId,
      );
    },
    nextWake: (definitions, after) =>
      run('find the next wake-up', () => nextWake(sql, names, definitions, after)),
    delete: (runId) => {
      writes.storedItems.forget(runId);
      return run('delete a run', () => deleteRun(sql, names, runId));
    },
    requestCancel: (runId) => run('request a cancellation', () => requestCancel(sql, names, runId)),
    claimable: (claimableOptions) =>
      run('find claimable runs', () => claimableRuns(sql, names, claimableOptions)),
    claim: async (claimOptions) => {
      await ensureReady();
      return leases.claim(claimOptions);
    },
    // A session connection behind a transaction-pooling proxy is refused here (poolerDetectedError), before a
    // worker claims: its start() rejects instead of reporting the same error at every poll.
    prepare: async () => {
      await ensureReady();
      if (session === undefined) return;
      try {
        await session.id();
      } catch (error) {
        throw toStoreError(error, 'open its liveness session', names.schema);
      }
    },
    subscribe: async (onWork) => {
      await ensureReady();
      try {
        // postgres() gives LISTEN its own connection and re-listens after it reconnects. A LISTEN does not
        // last behind a transaction-pooling proxy: it goes where the session connection goes.
        const listener =
          options.lockConnection === undefined
            ? sql
            : (listening ??= postgres({
                ...options.lockConnection,
                max: 1,
                onnotice: () => undefined,
              }));
        const { unlisten } = await listener.listen(names.channel, () => onWork());
        return unlisten;
      } catch (error) {
        throw toStoreError(error, 'listen for work', names.schema);
      }
    },
    prune: ({ olderThan, status = terminalStatuses }) =>
      run('prune runs', () =>
        pruneRuns(
          sql,
          names,
          typeof olderThan === 'number' ? olderThan : olderThan.getTime(),
          typeof status === 'string' ? [status] : status,
        ),
      ),
    acquire: async (runId, acquireOptions) => {
      await ensureReady();
      return leases.acquire(runId, acquireOptions);
    },
    renew: (lease, ttlMs) => leases.renew(lease, ttlMs),
    adopt: (childRunId, parent) =>
      run('adopt a child run', async () => {
        const lease = await adoptRun(sql, names, childRunId, parent);
        if (lease === 'missing') throw new RunNotFoundError(childRunId);
        if (lease === 'not-a-child') throw notAChildError(childRunId, parent.runId);
        return lease;
      }),
    release: async (lease) => {
      await ensureReady();
      writes.storedItems.forget(lease.runId);
      return leases.release(lease);
    },
    close,
    [Symbol.asyncDispose]: close,
  };
  return store;
}
