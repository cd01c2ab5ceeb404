/**
 * The store a command works on: the one a user module exports (`--module`, as `cairn-worker` loads it), else
 * Postgres at DATABASE_URL, else Redis at REDIS_URL. The drivers are optional peer dependencies, loaded only
 * when asked for.
 */
import { CairnError, type DurableStore } from '@cairn/sdk';
import { loadWorkerModule, type Runnable } from '@cairn/worker';
import { UsageError } from './cli-errors.js';
import type { StoreSelection } from './parse-args.js';

/** A store opened for one command, and how to let go of it. */
export interface OpenedStore {
  store: DurableStore;
  /** The definitions a `--module` exports (what `runs resume` can perform here); empty otherwise. */
  runnables: Runnable[];
  /** Where it came from, for messages. */
  source: 'module' | 'postgres' | 'redis';
  /** Ends every connection the command opened, so the process exits at once. */
  close(): Promise<void>;
}

/** Opens the store `selection` and `env` name; throws `UsageError` when they name none. */
export async function openStore(
  selection: StoreSelection,
  env: NodeJS.ProcessEnv,
): Promise<OpenedStore> {
  if (selection.module !== undefined) return openModule(selection.module);
  const databaseUrl = env.DATABASE_URL;
  if (databaseUrl !== undefined && databaseUrl !== '') {
    if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
      throw new UsageError('DATABASE_URL must be a postgres:// or postgresql:// URL.');
    }
    return openPostgres(databaseUrl, selection.schema);
  }
  const redisUrl = env.REDIS_URL;
  if (redisUrl !== undefined && redisUrl !== '') return openRedis(redisUrl, selection.prefix);
  throw new UsageError(
    'Which store? Pass --module <path> (or CAIRN_MODULE), or set DATABASE_URL or REDIS_URL.',
  );
}

async function openModule(path: string): Promise<OpenedStore> {
  const loaded = await loadWorkerModule(path, { requireDefinitions: false });
  return {
    store: loaded.store,
    runnables: [...loaded.agents, ...loaded.planners, ...loaded.definitions],
    source: 'module',
    // As cairn-worker ends: the module's close() ends its pools, store.close() what the store opened itself.
    async close() {
      try {
        await loaded.close?.();
      } finally {
        await (loaded.store as { close?: () => unknown }).close?.();
      }
    },
  };
}

async function openPostgres(url: string, schema: string | undefined): Promise<OpenedStore> {
  const [{ pgStore }, { default: postgres }] = await Promise.all([
    optional(() => import('@cairn/store-pg'), '@cairn/store-pg', postgresPackages),
    optional(() => import('postgres'), 'postgres', postgresPackages),
  ]);
  const sql = postgres(url, { max: 2, onnotice: () => undefined });
  const store = pgStore({ sql, ...(schema === undefined ? {} : { schema }) });
  return withDriver(store, 'postgres', () => sql.end({ timeout: 5 }));
}

async function openRedis(url: string, prefix: string | undefined): Promise<OpenedStore> {
  const [{ redisStore }, { Redis }] = await Promise.all([
    optional(() => import('@cairn/store-redis'), '@cairn/store-redis', redisPackages),
    optional(() => import('ioredis'), 'ioredis', redisPackages),
  ]);
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  // A connection error is the store's to report (STORE_UNAVAILABLE), not an unhandled 'error' event.
  client.on('error', () => undefined);
  const store = redisStore({ client, ...(prefix === undefined ? {} : { prefix }) });
  return withDriver(store, 'redis', () => client.disconnect());
}

/** A store over a driver client this command made: closing ends the store's own connections, then the client. */
function withDriver(
  store: DurableStore & { close(): Promise<void> },
  source: 'postgres' | 'redis',
  end: () => unknown,
): OpenedStore {
  return {
    store,
    runnables: [],
    source,
    async close() {
      try {
        await store.close();
      } finally {
        await end();
      }
    },
  };
}

const postgresPackages = { variable: 'DATABASE_URL', install: '@cairn/store-pg postgres' };
const redisPackages = { variable: 'REDIS_URL', install: '@cairn/store-redis ioredis' };

/** Imports an optional peer dependency; `STORE_REQUIRED` naming what to install when it is absent. */
async function optional<T>(
  load: () => Promise<T>,
  name: string,
  packages: { variable: string; install: string },
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    throw new CairnError(
      'STORE_REQUIRED',
      `${packages.variable} is set, but ${name} is not installed: npm install ${packages.install}`,
      { cause: error, data: { package: name } },
    );
  }
}
