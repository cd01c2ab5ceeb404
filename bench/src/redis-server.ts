import { spawn, spawnSync } from 'node:child_process';
import { freePort } from '@cairn/testing';
import { Redis } from 'ioredis';

/** A Redis the bench uses: `REDIS_URL`'s, or a `redis-server` child of the bench, stopped with `stop`. */
export interface BenchRedis {
  url: string;
  /** Where it came from: `REDIS_URL` or `redis-server <version>` (a child of the bench). */
  source: string;
  stop(): Promise<void>;
}

/** Why no Redis can be had: the message a row that needs one fails with. */
export const noRedisServerMessage = 'no redis-server on the PATH and no REDIS_URL';

/**
 * `REDIS_URL` when set (the row then shares that server: it works under a key prefix of its own), else a
 * `redis-server` without persistence on a free port: the figures are commands and client time, not fsyncs.
 */
export async function benchRedis(): Promise<BenchRedis> {
  const shared = process.env.REDIS_URL;
  if (shared !== undefined && shared !== '')
    return { url: shared, source: 'REDIS_URL', stop: async () => undefined };
  const version = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (version.error !== undefined || version.status !== 0) throw new Error(noRedisServerMessage);
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const url = `redis://127.0.0.1:${port}`;
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  for (let attempt = 0; ; attempt += 1) {
    const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      await probe.ping();
      break;
    } catch (error) {
      if (attempt >= 100) {
        await stop();
        throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      probe.disconnect();
    }
  }
  return {
    url,
    source: `redis-server ${/v=(\S+)/.exec(version.stdout)?.[1] ?? ''}`.trim(),
    stop,
  };
}

/** Calls per command since the server started (`INFO commandstats`), without INFO's own. */
export async function commandCalls(client: Redis): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const line of (await client.info('commandstats')).split('\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (match !== null && match[1] !== 'info') calls.set(match[1]!, Number(match[2]));
  }
  return calls;
}

/** Deletes every key under `prefix`, a page at a time. */
export async function deletePrefix(client: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1_000);
    cursor = next;
    if (keys.length > 0) await client.unlink(...keys);
  } while (cursor !== '0');
}
