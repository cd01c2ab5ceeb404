import {
  isTerminalStatus,
  LeaseLostError,
  RunNotFoundError,
  terminalStatuses,
  type Checkpoint,
  type DurableStore,
  type NewRun,
  type RunRecord,
  type RunStatus,
} from '@cairn/sdk';
import type { Options } from 'postgres';
import type { AnySql } from './db.js';
import { toStoreError } from './errors.js';
import { Leases } from './leases.js';
import { LockConnection } from './lock-connection.js';
import { checkSchema, migrate, renderMigrationSql } from './migrations.js';
import { schemaNames, type Names } from './names.js';
import { adoptRun } from './sql/adopt-run.js';
import { appendJournals, type JournalWrite } from './sql/append-journal.js';
import { claimableRuns } from './sql/claimable-runs.js';
import { createRuns } from './sql/create-run.js';
import { deleteRun } from './sql/delete-run.js';
import { listRuns } from './sql/list-runs.js';
import { loadRun } from './sql/load-run.js';
import { pruneRuns } from './sql/prune-runs.js';
import { requestCancel } from './sql/request-cancel.js';
import { saveCheckpoints, type CheckpointWrite, type SaveOutcome } from './sql/save-checkpoint.js';
import { WriteBatcher } from './write-batcher.js';
import { splitSnapshot, StoredItems } from './snapshot-items.js';
import { updateStatus } from './sql/update-status.js';

/** Options of `pgStore`. */
export interface PgStoreOptions {
  /** A `postgres()` instance the caller owns and ends; the store never ends it. */
  sql: AnySql;
  /** The schema holding the store's tables. @defaultValue 'cairn' */
  schema?: string;
  /**
   * Connection options of the store's own one-connection instance that holds its advisory locks; set it to
   * reach Postgres directly when `sql` goes through a transaction-pooling proxy.
   * @defaultValue the host, port, database, user, password and ssl settings of `sql.options`
   */
  lockConnection?: Options<Record<string, never>>;
  /** How long one statement on the lock connection may take before its locks are taken as lost. @defaultValue 10000 */
  lockTimeoutMs?: number;
  /** How long a claimer waits for a frozen holder's backend to exit after terminating it. @defaultValue 5000 */
  terminateWaitMs?: number;
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
  /** Ends the store's lock connection, which releases every advisory lock it holds. Leaves `sql` open. */
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
    connection: { ...o.connection, application_name: 'cairn-lock' },
    ...(o.target_session_attrs ? { target_session_attrs: o.target_session_attrs } : {}),
  } as unknown as Options<Record<string, never>>;
}

/**
 * Creates a store on Postgres over the caller's `postgres()` instance. It never migrates by itself: until
 * `migrate()` (or `migrationSql()` applied by your tool) brings the schema to this version, every call fails
 * with `SCHEMA_MISMATCH` saying what to run.
 */
export function pgStore(options: PgStoreOptions): PgStore {
  const names: Names = schemaNames(options.schema ?? 'cairn');
  const sql: AnySql = options.sql;
  const lock = new LockConnection({
    options: options.lockConnection ?? lockOptionsFrom(options.sql),
    timeoutMs: options.lockTimeoutMs ?? 10_000,
    schema: names.schema,
  });
  const leases = new Leases({
    sql,
    names,
    lock,
    terminateWaitMs: options.terminateWaitMs ?? 5_000,
  });
  let ready: Promise<void> | undefined;
  const storedItems = new StoredItems();
  // Checkpoints and journal appends of many runs share statements (and commits) when they arrive together.
  const checkpoints = new WriteBatcher<CheckpointWrite, SaveOutcome>((writes) =>
    saveCheckpoints(sql, names, writes),
  );
  const appends = new WriteBatcher<JournalWrite, boolean>((writes) =>
    appendJournals(sql, names, writes),
  );
  const creations = new WriteBatcher<NewRun, { created: boolean; run: RunRecord }>((runs) =>
    createRuns(sql, names, runs),
  );

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

  async function run<T>(operation: string, body: () => Promise<T>): Promise<T> {
    await ensureReady();
    try {
      return await body();
    } catch (error) {
      throw toStoreError(error, operation, names.schema);
    }
  }

  /**
   * A checkpoint that sends only the long arrays' new elements when this instance knows what is stored, and
   * everything when it does not (or someone else wrote since: the version tells).
   */
  async function save(runId: string, epoch: number, checkpoint: Checkpoint): Promise<boolean> {
    const split = splitSnapshot(checkpoint.snapshot);
    let items = storedItems.plan(runId, split);
    const write = { runId, epoch, checkpoint, inline: split.inline };
    let outcome = await checkpoints.submit({ ...write, items });
    if (outcome.type === 'stale') {
      items = storedItems.plan(runId, split, true);
      outcome = await checkpoints.submit({ ...write, items });
    }
    if (outcome.type !== 'saved') {
      storedItems.forget(runId);
      return false;
    }
    if (isTerminalStatus(checkpoint.status)) storedItems.forget(runId);
    else storedItems.remember(runId, outcome.version, items.canonical);
    return true;
  }

  /** One fenced write: refused at once when this store's lock connection for it was lost, else by epoch. */
  async function fenced(
    runId: string,
    epoch: number,
    operation: string,
    write: () => Promise<boolean>,
  ) {
    if (leases.isFenced(runId, epoch))
      throw new LeaseLostError(runId, epoch, 'the lock connection was lost');
    const ok = await run(operation, write);
    if (!ok) throw new LeaseLostError(runId, epoch);
  }

  const store: PgStore = {
    schema: names.schema,
    migrate: () => migrate(sql, names).finally(() => (ready = undefined)),
    migrationSql: () => renderMigrationSql(names),
    create: (init) => run('create a run', () => creations.submit(init)),
    load: (runId) =>
      run('load a run', async () => {
        const found = await loadRun(sql, names, runId);
        if (found === undefined) return undefined;
        storedItems.rememberLoaded(runId, found.stored.version, found.stored.arrays);
        return found.loaded;
      }),
    save: (runId, epoch, checkpoint) =>
      fenced(runId, epoch, 'save a checkpoint', () => save(runId, epoch, checkpoint)),
    append: (runId, epoch, entries) =>
      fenced(runId, epoch, 'append to the journal', () =>
        appends.submit({ runId, epoch, entries }),
      ),
    updateStatus: (runId, epoch, update) =>
      fenced(runId, epoch, 'update a status', () => updateStatus(sql, names, runId, epoch, update)),
    list: (filter = {}) => run('list runs', () => listRuns(sql, names, filter)),
    delete: (runId) => {
      storedItems.forget(runId);
      return run('delete a run', () => deleteRun(sql, names, runId));
    },
    requestCancel: (runId) => run('request a cancellation', () => requestCancel(sql, names, runId)),
    claimable: (claimableOptions) =>
      run('find claimable runs', () => claimableRuns(sql, names, claimableOptions)),
    subscribe: async (onWork) => {
      await ensureReady();
      try {
        // postgres() gives LISTEN its own connection and re-listens after it reconnects.
        const { unlisten } = await sql.listen(names.channel, () => onWork());
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
        return lease;
      }),
    release: async (lease) => {
      await ensureReady();
      return leases.release(lease);
    },
    close: () => lock.close(),
    [Symbol.asyncDispose]: () => lock.close(),
  };
  return store;
}
