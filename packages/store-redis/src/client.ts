import { createHash } from 'node:crypto';
import { CairnError } from '@cairn/sdk';
import type { Cluster, Redis } from 'ioredis';
import { toStoreError, unavailable } from './errors.js';

/** The client the store runs on: an ioredis `Redis` (standalone, Sentinel) or `Cluster`, owned by the caller. */
export type RedisClient = Redis | Cluster;

/** A Lua script, sent by its SHA-1 and loaded on a `NOSCRIPT` reply (a restarted or new node). */
export interface LuaScript {
  name: string;
  source: string;
  sha: string;
}

/** Names a script and computes its SHA-1 once. */
export function lua(name: string, source: string): LuaScript {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/**
 * Runs commands on the caller's client without ever handing it a command while it is offline: ioredis would
 * queue it and send it after reconnecting, when a lease it relied on may be gone. A client still connecting
 * for the first time is waited for; one that is reconnecting fails at once with `STORE_UNAVAILABLE`. Every
 * call is bounded by `timeoutMs`; past it the outcome is unknown and the error says so.
 */
export class Gate {
  /**
   * Told of every call's outcome: how long it took when it got an answer, else the typed error it failed with.
   */
  observer: ((outcome: { error: CairnError } | { tookMs: number }) => void) | undefined;

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    private readonly timeoutMs: number,
  ) {}

  get isCluster(): boolean {
    return this.client.isCluster;
  }

  /** Sends `body` once the client is ready, and maps whatever it throws to a typed error. */
  async call<T>(operation: string, body: (client: RedisClient) => Promise<T>): Promise<T> {
    const started = Date.now();
    try {
      await this.ready(operation);
      const answer = await this.bounded(operation, body(this.client));
      this.observer?.({ tookMs: Date.now() - started });
      return answer;
    } catch (error) {
      const typed = toStoreError(error, operation, this.prefix);
      this.observer?.({ error: typed });
      throw typed;
    }
  }

  /** Runs a script with its keys and arguments. */
  script(operation: string, script: LuaScript, keys: string[], args: string[]): Promise<unknown> {
    return this.call(operation, async (client) => {
      try {
        return await client.evalsha(script.sha, keys.length, ...keys, ...args);
      } catch (error) {
        if (!String((error as Error | undefined)?.message).startsWith('NOSCRIPT')) throw error;
        return await client.eval(script.source, keys.length, ...keys, ...args);
      }
    });
  }

  private async ready(operation: string): Promise<void> {
    const { status } = this.client;
    if (status === 'ready') return;
    if (status === 'end') {
      throw new CairnError(
        'STORE_FAILED',
        `Cannot ${operation}: the Redis client given to redisStore was closed.`,
        { data: { operation, prefix: this.prefix, clientStatus: status } },
      );
    }
    if (status === 'wait') this.client.connect().catch(() => undefined);
    else if (status !== 'connecting' && status !== 'connect') {
      throw unavailable(operation, `the client is not connected (status "${status}")`, {
        prefix: this.prefix,
        clientStatus: status,
      });
    }
    await this.bounded(
      operation,
      new Promise<void>((resolve, reject) => {
        const done = () => {
          this.client.off('ready', onReady);
          this.client.off('close', onClose);
        };
        const onReady = () => {
          done();
          resolve();
        };
        const onClose = () => {
          done();
          reject(unavailable(operation, 'the connection to Redis could not be opened'));
        };
        this.client.on('ready', onReady);
        this.client.on('close', onClose);
      }),
    );
  }

  private bounded<T>(operation: string, promise: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            unavailable(
              operation,
              `no answer within ${this.timeoutMs} ms; the outcome is unknown`,
              {
                prefix: this.prefix,
                outcome: 'unknown',
              },
            ),
          ),
        this.timeoutMs,
      );
    });
    promise.catch(() => undefined);
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
  }
}
