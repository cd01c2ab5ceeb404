import { CairnError } from '@cairn/sdk';
import postgres, { type Options, type Sql } from 'postgres';
import { query, type Db } from './db.js';
import { toStoreError } from './errors.js';

/** One live session of the lock connection. Its generation changes whenever the session is replaced. */
interface Session {
  generation: number;
  pid: number;
  instance: Sql;
  reserved: Db;
}

/** Options of `LockConnection`. */
export interface LockConnectionOptions {
  /** Connection options for the store's own small `postgres()` instance. */
  options: Options<Record<string, never>>;
  /** How long one statement may take before the session is taken as broken. */
  timeoutMs: number;
  schema: string;
}

/** Thrown when statements on one reserved connection run on different backends: a transaction pooler. */
export function poolerDetectedError(schema: string, first: number, second: number): CairnError {
  return new CairnError(
    'STORE_FAILED',
    'The lock connection changed backend between two statements (pid ' +
      `${first} then ${second}): it goes through a transaction-pooling proxy, where session advisory locks ` +
      'do not work. Point the lock connection straight at Postgres with pgStore({ lockConnection }).',
    { data: { schema, firstPid: first, secondPid: second } },
  );
}

/**
 * The one dedicated connection on which a store holds its advisory locks: a reserved connection of a
 * `postgres()` instance of its own (`max: 1`, `max_lifetime: null`). Any error, timeout, close or backend
 * change ends the session: every lock on it is gone, so its generation is retired and the next statement
 * opens a new session. Callers tie what they hold to a generation and check `isLive`.
 */
export class LockConnection {
  private session: Promise<Session> | undefined;
  private current: Session | undefined;
  private generation = 0;
  private liveGeneration = -1;
  private closed = false;

  constructor(private readonly config: LockConnectionOptions) {}

  /** True while the session of this generation is the current, healthy one. */
  isLive(generation: number): boolean {
    return !this.closed && generation === this.liveGeneration;
  }

  /** The generation the next statement runs under, opening a session if there is none. */
  async currentGeneration(): Promise<number> {
    return (await this.open()).generation;
  }

  /**
   * Runs one statement whose last column is `pg_backend_pid()` on the session of `generation` (or the current
   * one). Fails with `LeaseLostError`-worthy `STORE_UNAVAILABLE` when the session broke, and never runs on a
   * newer session than the caller expects.
   */
  async run<T>(
    operation: string,
    statement: (db: Db) => Promise<T & { pid: number }>,
    generation?: number,
  ): Promise<{ result: T & { pid: number }; generation: number }> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(Object.assign(new Error('the lock connection timed out'), { code: 'ETIMEDOUT' })),
        this.config.timeoutMs,
      );
      timer.unref();
    });
    let session: Session | undefined;
    try {
      session = await Promise.race([this.open(), timeout]);
      if (generation !== undefined && session.generation !== generation) {
        throw new CairnError('STORE_UNAVAILABLE', 'The lock connection was replaced.', {
          retryable: true,
          data: { operation, schema: this.config.schema },
        });
      }
      const result = await Promise.race([statement(session.reserved), timeout]);
      if (result.pid !== session.pid)
        throw poolerDetectedError(this.config.schema, session.pid, result.pid);
      return { result, generation: session.generation };
    } catch (error) {
      // Never retire a newer session than the one the caller's locks live on.
      if (
        session !== undefined &&
        (generation === undefined || session.generation === generation)
      ) {
        this.retire(session);
      }
      throw toStoreError(error, operation, this.config.schema);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Ends the session and its instance; the store's locks are released by the server. */
  async close(): Promise<void> {
    this.closed = true;
    this.current = undefined;
    this.liveGeneration = -1;
    const session = this.session;
    this.session = undefined;
    if (session === undefined) return;
    const live = await session.catch(() => undefined);
    if (live !== undefined) await live.instance.end({ timeout: 0 }).catch(() => undefined);
  }

  private open(): Promise<Session> {
    if (this.closed) {
      return Promise.reject(
        new CairnError('STORE_FAILED', 'The store is closed.', {
          data: { schema: this.config.schema },
        }),
      );
    }
    if (this.session === undefined) {
      const opening = this.connect();
      this.session = opening;
      opening.catch(() => {
        if (this.session === opening) this.session = undefined;
      });
    }
    return this.session;
  }

  private async connect(): Promise<Session> {
    const generation = ++this.generation;
    let session: Session | undefined;
    const instance = postgres({
      ...this.config.options,
      max: 1,
      max_lifetime: null,
      idle_timeout: 0,
      connect_timeout: Math.max(1, Math.ceil(this.config.timeoutMs / 1000)),
      onnotice: () => undefined,
      onclose: () => {
        if (session !== undefined) this.retire(session);
      },
    });
    try {
      const reserved = await instance.reserve();
      // Two statements on a reserved connection must run on one backend; behind a transaction pooler they
      // may not, and session locks would leak to other clients.
      const first = (await query(reserved, 'SELECT pg_backend_pid()'))[0]?.[0] as number;
      const second = (await query(reserved, 'SELECT pg_backend_pid()'))[0]?.[0] as number;
      if (first !== second) throw poolerDetectedError(this.config.schema, first, second);
      session = { generation, pid: first, instance, reserved };
      if (this.closed) throw new CairnError('STORE_FAILED', 'The store is closed.');
      this.current = session;
      this.liveGeneration = generation;
      return session;
    } catch (error) {
      await instance.end({ timeout: 0 }).catch(() => undefined);
      throw toStoreError(error, 'open the lock connection', this.config.schema);
    }
  }

  /** Retires a session: its locks are gone, whatever holds them is fenced, the next call reconnects. */
  private retire(session: Session): void {
    if (this.liveGeneration === session.generation) this.liveGeneration = -1;
    if (this.current === session) {
      this.current = undefined;
      this.session = undefined;
    }
    void session.instance.end({ timeout: 0 }).catch(() => undefined);
  }
}
