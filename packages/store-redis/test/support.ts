import { randomUUID } from 'node:crypto';
import { redisStore, type RedisStore, type RedisStoreOptions } from '@cairn/store-redis';
import { startTcpProxy, type TcpProxy } from '@cairn/testing';
import { Redis, type RedisOptions } from 'ioredis';
import { it } from 'vitest';
// Liveness records are found by the key layout: a test lapses one as time would.
import { bucketCount, keySpace } from '../src/keys.js';

/** The shared Redis the tests use; each test file and test works under a prefix of its own. */
export const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Why Redis at `url` cannot be used, or undefined when it answers PING. */
export async function unreachable(url = redisUrl): Promise<string | undefined> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  let cause = '';
  client.on('error', (error: Error) => (cause = error.message));
  try {
    await client.connect();
    await client.ping();
    return undefined;
  } catch (error) {
    return `no Redis reachable at ${url} (${cause || (error as Error).message}); set REDIS_URL`;
  } finally {
    client.disconnect();
  }
}

/** Registers one skipped test whose title says why the file's tests did not run. */
export function skippedBecause(reason: string): void {
  it.skip(`skipped: ${reason}`, () => undefined);
}

/** Opens a client and waits until it is ready. */
export async function connect(
  url = redisUrl,
  options: Omit<RedisOptions, 'replyMapping'> = {},
): Promise<Redis> {
  const client = new Redis(url, { maxRetriesPerRequest: 1, ...options });
  client.on('error', () => undefined);
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
  return client;
}

/** A client of the shared Redis through a TCP proxy of its own, which a test can cut as a network would. */
export async function connectThroughProxy(): Promise<{ proxy: TcpProxy; client: Redis }> {
  const target = new URL(redisUrl);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
  const via = new URL(redisUrl);
  via.hostname = '127.0.0.1';
  via.port = String(proxy.port);
  return { proxy, client: await connect(via.toString(), { maxRetriesPerRequest: null }) };
}

/** Resolves once the client's status is `status`. */
export function until(client: Redis, status: 'ready' | 'reconnecting'): Promise<void> {
  if (client.status === status) return Promise.resolve();
  return new Promise((resolve) => {
    const check = () => {
      if (client.status !== status) return;
      client.off(status, check);
      resolve();
    };
    client.on(status, check);
  });
}

/** Deletes every key under `prefix` (SCAN is fine in a test's cleanup, never in the store). */
export async function deleteKeys(client: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, found] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
    cursor = next;
    // One key per command: on Cluster a multi-key UNLINK must stay within one slot.
    await Promise.all(found.map((key) => client.unlink(key)));
  } while (cursor !== '0');
}

/** A unique prefix under which one test's keys live. */
export function uniquePrefix(label: string): string {
  return `cairn-test:${label}:${randomUUID()}`;
}

/** Stores on separate clients under one prefix, as separate workers would be; `close` cleans up. */
export interface RedisHarness {
  prefix: string;
  admin: Redis;
  store(options?: Partial<RedisStoreOptions>): Promise<RedisStore>;
  close(): Promise<void>;
}

export async function createRedisHarness(label: string, url = redisUrl): Promise<RedisHarness> {
  const prefix = uniquePrefix(label);
  const admin = await connect(url);
  const clients: Redis[] = [admin];
  return {
    prefix,
    admin,
    async store(options = {}) {
      const client = options.client === undefined ? await connect(url) : undefined;
      if (client !== undefined) clients.push(client);
      return redisStore({ client: client ?? admin, prefix, ...options });
    },
    async close() {
      await deleteKeys(admin, prefix);
      for (const client of clients) client.disconnect();
    },
  };
}

/** Waits `ms` of wall time: Redis's clock decides when a lease runs out. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Makes store instance `instance`'s liveness lapse `agoMs` before now on the server's clock, in every bucket that
 * records it, as renewals that stopped reaching Redis would: the takeover grace counts from then.
 */
export async function lapseLiveness(
  admin: Redis,
  prefix: string,
  instance: string,
  agoMs = 0,
): Promise<void> {
  const keys = keySpace(prefix);
  const [seconds, micros] = await admin.time();
  const at = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - agoMs;
  for (let bucket = 0; bucket < bucketCount; bucket += 1)
    await admin.zadd(keys.live(bucket), 'XX', at, instance);
}
