/**
 * The store a command works on: the one a user module exports (`--module`, as `cairn-worker` loads it), else
 * Postgres at DATABASE_URL, else Redis at REDIS_URL. The drivers are optional peer dependencies, loaded only
 * when asked for. With `--codec` it is read and written through the codec (`protectPayloads`).
 */
import { CairnError, isProtectedStore, protectPayloads, type DurableStore } from '@cairn/sdk';
import { loadWorkerModule, type Runnable } from '@cairn/worker';
import { UsageError } from './cli-errors.js';
import { loadCodecModule } from './codec-module.js';
import type { StoreSelection } from './parse-args.js';

/** A store opened for one command, and how to let go of it. */
export interface OpenedStore {
  /** Read and written through `--codec`'s codec when there is one (its payloads as stored, without). */
  store: DurableStore;
  /** The definitions a `--module` exports (what `runs resume` can perform here); empty otherwise. */
  runnables: Runnable[];
  /** Where it came from, for messages. */
  source: 'module' | 'postgres' | 'redis';
  /** Ends every connection the command opened, so the process exits at once. */
  close(): Promise<void>;
}

/**
 * Opens the store `selection` and `env` name, through the codec `selection.codec` names; throws `UsageError`
 * when they name no store, or a codec module that exports no codec.
 */
export async function openStore(
  selection: StoreSelection,
  env: NodeJS.ProcessEnv,
): Promise<OpenedStore> {
  // Before any connection is made: a codec module that cannot be used leaves nothing to close.
  const codec = selection.codec === undefined ? undefined : await loadCodecModule(selection.codec);
  const opened = await openRawStore(selection, env);
  if (codec === undefined) return opened;
  if (isProtectedStore(opened.store)) {
    await opened.close();
    throw new UsageError(
      "The module's store is already behind protectPayloads: it reads its payloads itself. Drop --codec.",
    );
  }
  // The wrapper has no `close`: closing stays with the store underneath, which `opened.close` ends.
  return { ...opened, store: protectPayloads(opened.store, codec) };
}

async function openRawStore(
  selection: StoreSelection,
  env: NodeJS.ProcessEnv,
): Promise<OpenedStore> {
  if (selection.module !== undefined) return openModule(selection.module);
  const reachMs = connectTimeoutMs(env);
  const databaseUrl = env.DATABASE_URL;
  if (databaseUrl !== undefined && databaseUrl !== '') {
    if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
      throw new UsageError('DATABASE_URL must be a postgres:// or postgresql:// URL.');
    }
    return openPostgres(databaseUrl, selection.schema, reachMs);
  }
  const redisUrl = env.REDIS_URL;
  if (redisUrl !== undefined && redisUrl !== '')
    return openRedis(redisUrl, selection.prefix, reachMs);
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

async function openPostgres(
  url: string,
  schema: string | undefined,
  reachMs: number,
): Promise<OpenedStore> {
  const [{ pgStore }, { default: postgres }] = await Promise.all([
    optional(() => import('@cairn/store-pg'), '@cairn/store-pg', postgresPackages),
    optional(() => import('postgres'), 'postgres', postgresPackages),
  ]);
  const connectSeconds = Math.max(1, Math.ceil(reachMs / 1000));
  const sql = postgres(url, { max: 2, onnotice: () => undefined, connect_timeout: connectSeconds });
  const end = () => sql.end({ timeout: 5 });
  // A server that never answered has nothing to finish: its connections are ended at once.
  await reached(
    'Postgres',
    url,
    reachMs,
    () => sql`SELECT 1`,
    () => sql.end({ timeout: 0 }),
  );
  const store = pgStore({ sql, ...(schema === undefined ? {} : { schema }) });
  return withDriver(store, 'postgres', end);
}

async function openRedis(
  url: string,
  prefix: string | undefined,
  reachMs: number,
): Promise<OpenedStore> {
  const [{ redisStore }, { Redis }] = await Promise.all([
    optional(() => import('@cairn/store-redis'), '@cairn/store-redis', redisPackages),
    optional(() => import('ioredis'), 'ioredis', redisPackages),
  ]);
  const client = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout: reachMs });
  // A connection error is the store's to report (STORE_UNAVAILABLE), not an unhandled 'error' event.
  client.on('error', () => undefined);
  const end = () => client.disconnect();
  await reached('Redis', url, reachMs, () => client.ping(), end);
  const store = redisStore({ client, ...(prefix === undefined ? {} : { prefix }) });
  return withDriver(store, 'redis', end);
}

/** How long a command waits for its store to answer first. @defaultValue 10 s (CAIRN_CONNECT_TIMEOUT_MS) */
function connectTimeoutMs(env: NodeJS.ProcessEnv): number {
  const raw = env.CAIRN_CONNECT_TIMEOUT_MS;
  if (raw === undefined || raw === '') return 10_000;
  const ms = Number(raw);
  if (!Number.isSafeInteger(ms) || ms < 1) {
    throw new UsageError('CAIRN_CONNECT_TIMEOUT_MS must be a whole number of milliseconds.');
  }
  return ms;
}

/**
 * Asks the store's server one trivial question before the command starts: a host that takes the connection and
 * never answers (a firewall, a wrong address behind a proxy) would otherwise hold the command forever, since a
 * driver's connect timeout covers only the socket. Past `ms` the connection is ended and the command fails with
 * `STORE_UNAVAILABLE`, naming the server (never its password).
 */
async function reached(
  what: string,
  url: string,
  ms: number,
  ask: () => PromiseLike<unknown>,
  end: () => unknown,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)));
  let answer: unknown;
  try {
    answer = await Promise.race([Promise.resolve(ask()).then(() => 'answered' as const), late]);
  } catch (error) {
    answer = error;
  } finally {
    clearTimeout(timer);
  }
  if (answer === 'answered') return;
  await Promise.resolve(end()).catch(() => undefined);
  const where = serverOf(url);
  const why =
    answer === 'late'
      ? `did not answer within ${ms} ms`
      : `refused: ${answer instanceof Error ? answer.message : String(answer)}`;
  throw new CairnError('STORE_UNAVAILABLE', `${what} at ${where} ${why}.`, {
    retryable: true,
    data: { server: where, timeoutMs: ms },
    ...(answer === 'late' ? {} : { cause: answer }),
  });
}

/** The host and port of a store URL, without credentials. */
function serverOf(url: string): string {
  try {
    const parsed = new URL(url);
    return parsed.port === '' ? parsed.hostname : `${parsed.hostname}:${parsed.port}`;
  } catch {
    return 'the configured address';
  }
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
