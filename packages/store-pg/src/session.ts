import { randomBytes } from 'node:crypto';
import { CairnError } from '@cairn/sdk';
import postgres, { type Options, type Sql } from 'postgres';
import { query, type Db } from './db.js';
import { toStoreError } from './errors.js';
import type { Names } from './names.js';
import { openSession } from './sql/open-session.js';

/** Options of `LivenessSession`. */
export interface LivenessSessionOptions {
  /** Connection options for the session's own one-connection `postgres()` instance. */
  options: Options<Record<string, never>>;
  /** How long opening the session or a keepalive may take before the session is taken as lost. */
  timeoutMs: number;
  /** How often the session is checked, and reopened after a loss. */
  keepaliveMs: number;
  names: Names;
  /** This store instance, recorded on each of its sessions. */
  instance: string;
  /** A session was lost and another opened: the store moves the runs of the old ones to it. */
  onReopened(previous: readonly number[], current: number): Promise<void>;
}

/**
 * Thrown when the session connection's statements do not all run on the backend it connected to: a pooler
 * (PgBouncer announces a cancel key of its own, and in transaction mode runs each statement on any backend).
 */
export function poolerDetectedError(schema: string, first: number, second: number): CairnError {
  return new CairnError(
    'STORE_FAILED',
    'The session connection does not keep one backend of its own ' +
      `(expected pid ${first}, ran on ${second}): it goes through a connection pooler such as PgBouncer, ` +
      'which may hand its backend to other clients between statements (in transaction mode it does), so ' +
      'a session advisory lock would not last. Point it straight at Postgres with ' +
      "pgStore({ lockConnection }), or run without sessions with pgStore({ liveness: 'lease' }) (a " +
      "crashed holder's runs are then taken over when their leases run out).",
    { data: { schema, firstPid: first, secondPid: second } },
  );
}

interface Open {
  id: number;
  instance: Sql;
  reserved: Db;
  openedAt: number;
}

/**
 * The store instance's liveness: one dedicated connection holding a session advisory lock on a key of its
 * own, recorded in `sessions`. While it lives, the runs it holds are its; when it is gone (a crash, a lost
 * connection) any claimer can tell by taking that lock (`pg_try_advisory_xact_lock`, whatever its role), and
 * takes the runs over. Nothing else runs on this connection, so no statement of a run can stall it. A lost
 * session is reopened at once, and the runs of the old one are moved to the new one without a new epoch: a
 * lost connection is not a death.
 */
export class LivenessSession {
  private opening: Promise<Open> | undefined;
  private current: Open | undefined;
  private readonly lost: number[] = [];
  /** A session of this instance was lost once: it may have runs of its own to take back first. */
  private everLost = false;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly config: LivenessSessionOptions) {}

  /** The id of the live session, opening one when there is none. */
  async id(): Promise<number> {
    return (await this.open()).id;
  }

  /** How long the live session has been open, or 0 when none is. */
  age(now = Date.now()): number {
    return this.current === undefined ? 0 : now - this.current.openedAt;
  }

  /**
   * Whether this instance may take other instances' runs now: its first session never lost (it has no runs of
   * its own to take back), or the live one open for at least `graceMs` (after a failover, every instance takes
   * its own runs back first).
   */
  mayTakeOthers(graceMs: number, now = Date.now()): boolean {
    return !this.everLost || this.age(now) >= graceMs;
  }

  /** The ids of this instance's sessions: the live one and those lost since (their runs may still move here). */
  mine(): number[] {
    return this.current === undefined ? [...this.lost] : [this.current.id, ...this.lost];
  }

  /**
   * Takes session `id` as lost: a claim found its lock free before this instance noticed (the connection
   * went a moment ago, or silently). The next `id()` opens another and moves the lost one's runs to it.
   */
  reportLost(id: number): void {
    if (this.current?.id === id) this.retire(this.current);
  }

  /** Ends the session: its lock goes, and claimers take over what it still held. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    const open = this.current ?? (await this.opening?.catch(() => undefined));
    this.current = undefined;
    this.opening = undefined;
    if (open !== undefined) await open.instance.end({ timeout: 0 }).catch(() => undefined);
  }

  private open(): Promise<Open> {
    if (this.closed) {
      return Promise.reject(
        new CairnError('STORE_FAILED', 'The store is closed.', {
          data: { schema: this.config.names.schema },
        }),
      );
    }
    if (this.current !== undefined) return Promise.resolve(this.current);
    if (this.opening === undefined) {
      const opening = this.connect();
      this.opening = opening;
      opening.then(
        (open) => {
          this.current = open;
          this.opening = undefined;
          this.keepAlive();
          if (this.lost.length > 0) void this.moveLost(open.id);
        },
        () => {
          if (this.opening === opening) this.opening = undefined;
        },
      );
    }
    return this.opening;
  }

  private async connect(): Promise<Open> {
    const { names, timeoutMs } = this.config;
    let opened: Open | undefined;
    const instance = postgres({
      ...this.config.options,
      max: 1,
      max_lifetime: null,
      idle_timeout: 0,
      connect_timeout: Math.max(1, Math.ceil(timeoutMs / 1000)),
      onnotice: () => undefined,
      onclose: () => {
        if (opened !== undefined) this.retire(opened);
      },
    });
    try {
      const reserved = await instance.reserve();
      // Statements on a reserved connection must run on the backend it connected to. A pooler announces a
      // cancel key of its own instead of that backend's pid, and in transaction mode may run two statements
      // on two backends; an idle one even hands the same backend back each time, so a pid that changes is
      // not enough to tell.
      const rows = await reserved.unsafe('SELECT pg_backend_pid()').values();
      // The pid in the server's cancel key (BackendKeyData); null when none was sent.
      const announced = (rows.state as { pid?: number | null } | undefined)?.pid ?? null;
      const first = rows[0]?.[0] as number;
      const second = (await query(reserved, 'SELECT pg_backend_pid()'))[0]?.[0] as number;
      if (announced !== null && announced !== first) {
        throw poolerDetectedError(names.schema, announced, first);
      }
      if (first !== second) throw poolerDetectedError(names.schema, first, second);
      const key = randomBytes(8).readBigInt64BE(0).toString();
      const id = await openSession(reserved, names, key, this.config.instance);
      opened = { id, instance, reserved, openedAt: Date.now() };
      if (this.closed) throw new CairnError('STORE_FAILED', 'The store is closed.');
      return opened;
    } catch (error) {
      await instance.end({ timeout: 0 }).catch(() => undefined);
      throw toStoreError(error, 'open a session', names.schema);
    }
  }

  /** Checks the session every `keepaliveMs`; a session that does not answer in time is taken as lost. */
  private keepAlive(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => void this.check(), this.config.keepaliveMs);
    this.timer.unref();
  }

  private async check(): Promise<void> {
    if (this.closed) return;
    const open = this.current;
    if (open === undefined) {
      // Lost: open another one, which moves the runs of the lost ones to it.
      await this.open().catch(() => undefined);
      return;
    }
    if (this.lost.length > 0) await this.moveLost(open.id);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        query(open.reserved, 'SELECT 1'),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('keepalive timed out')), this.config.timeoutMs);
        }),
      ]);
    } catch {
      this.retire(open);
      await this.open().catch(() => undefined);
    } finally {
      clearTimeout(timer);
    }
  }

  private retire(open: Open): void {
    if (this.current !== open) return;
    this.current = undefined;
    this.everLost = true;
    this.lost.push(open.id);
    void open.instance.end({ timeout: 0 }).catch(() => undefined);
  }

  private async moveLost(current: number): Promise<void> {
    const previous = [...this.lost];
    try {
      await this.config.onReopened(previous, current);
      this.lost.splice(0, previous.length);
    } catch {
      // Tried again after the next loss or keepalive; until then claimers see the old sessions dead.
    }
  }
}
