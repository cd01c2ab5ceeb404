import {
  isTerminalStatus,
  LeaseLostError,
  notAChildError,
  RunNotFoundError,
  terminalStatuses,
  type Checkpoint,
  type DurableStore,
  type Fence,
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
import { WriteBatcher, type WriteOutcome } from './write-batcher.js';
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
  const leases = new Leases({ sql, names, lock });
  let ready: Promise<void> | undefined;
  const storedItems = new StoredItems();
  /**
   * A batch statement whose failure is a typed store error, so the batcher can tell a retryable one; a
   * statement of one write (how the batcher isolates a bad one) names its run.
   */
  const batch =
    <W extends { fence: Fence }, R>(operation: string, send: (writes: W[]) => Promise<R[]>) =>
    async (writes: W[]): Promise<Array<WriteOutcome<R>>> => {
      try {
        return (await send(writes)).map((value) => ({ value }));
      } catch (error) {
        const runId = writes.length === 1 ? writes[0]!.fence.runId : undefined;
        throw toStoreError(error, operation, names.schema, runId);
      }
    };
  // Checkpoints and journal appends of many runs share statements (and commits) when they arrive together.
  const checkpoints = new WriteBatcher<CheckpointWrite, SaveOutcome>(
    batch('save a checkpoint', (writes) => saveCheckpoints(sql, names, writes)),
    { keyOf: (write) => write.fence.runId },
  );
  const appends = new WriteBatcher<JournalWrite, LeaseLostError | undefined>(
    batch('append to the journal', (writes) => appendJournals(sql, names, writes)),
    { keyOf: (write) => write.fence.runId },
  );
  const creations = new WriteBatcher<NewRun, { created: boolean; run: RunRecord }>(
    async (runs) => {
      try {
        return (await createRuns(sql, names, runs)).map((outcome, i) =>
          'error' in outcome
            ? { error: toStoreError(outcome.error, 'create a run', names.schema, runs[i]!.runId) }
            : outcome,
        );
      } catch (error) {
        const runId = runs.length === 1 ? runs[0]!.runId : undefined;
        throw toStoreError(error, 'create a run', names.schema, runId);
      }
    },
    { keyOf: (run) => run.runId },
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

  async function run<T>(operation: string, body: () => Promise<T>, runId?: string): Promise<T> {
    await ensureReady();
    try {
      return await body();
    } catch (error) {
      throw toStoreError(error, operation, names.schema, runId);
    }
  }

  /**
   * A checkpoint that sends only the long arrays' new elements when this instance knows what is stored, and
   * everything when it does not (or someone else wrote since: the version tells).
   */
  async function save(fence: Fence, checkpoint: Checkpoint): Promise<LeaseLostError | undefined> {
    const { runId } = fence;
    const split = splitSnapshot(checkpoint.snapshot);
    let items = storedItems.plan(runId, split);
    const write = { fence, checkpoint, inline: split.inline };
    let outcome = await checkpoints.submit({ ...write, items });
    if (outcome.type === 'stale') {
      items = storedItems.plan(runId, split, true);
      outcome = await checkpoints.submit({ ...write, items });
    }
    if (outcome.type !== 'saved') {
      storedItems.forget(runId);
      if (outcome.type === 'refused') return outcome.error;
      if (outcome.type === 'stale')
        return new LeaseLostError(runId, fence.epoch, 'another writer raced it');
      return undefined;
    }
    if (isTerminalStatus(checkpoint.status)) storedItems.forget(runId);
    else storedItems.remember(runId, outcome.version, items.canonical);
    return undefined;
  }

  /**
   * One fenced write: refused at once when this store's claim of the run was lost with its lock session,
   * else by the statement. A refusal also frees what this store kept for the claim (its advisory lock).
   */
  async function fenced(
    fence: Fence,
    operation: string,
    write: () => Promise<LeaseLostError | undefined>,
  ): Promise<void> {
    if (leases.isFenced(fence))
      throw new LeaseLostError(fence.runId, fence.epoch, 'the lock connection was lost');
    const refused = await run(operation, write, fence.runId);
    if (refused !== undefined) {
      await leases.forget(fence);
      throw refused;
    }
  }

  const store: PgStore = {
    schema: names.schema,
    migrate: () => migrate(sql, names).finally(() => (ready = undefined)),
    migrationSql: () => renderMigrationSql(names),
    create: (init) => run('create a run', () => creations.submit(init), init.runId),
    load: (runId) =>
      run('load a run', async () => {
        const found = await loadRun(sql, names, runId);
        if (found === undefined) return undefined;
        storedItems.rememberLoaded(runId, found.stored.version, found.stored.arrays);
        return found.loaded;
      }),
    save: (fence, checkpoint) => fenced(fence, 'save a checkpoint', () => save(fence, checkpoint)),
    append: (fence, entries) =>
      fenced(fence, 'append to the journal', () => appends.submit({ fence, entries })),
    updateStatus: (fence, update) =>
      fenced(fence, 'update a status', () => updateStatus(sql, names, fence, update)),
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
        if (lease === 'not-a-child') throw notAChildError(childRunId, parent.runId);
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
