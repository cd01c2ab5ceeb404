import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@cairn/testing';
import { Cluster, Redis } from 'ioredis';

/** A `redis-server` child process of this test file, with AOF in a temporary directory. */
export interface OwnRedis {
  url: string;
  port: number;
  /** Stops the server (SIGTERM, or SIGKILL for a crash) and starts it again on the same port and data. */
  restart(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  stop(): Promise<void>;
}

/** Why no `redis-server` can be started here, or undefined when the binary is on the PATH. */
export function noRedisServer(): string | undefined {
  const found = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  return found.error === undefined && found.status === 0
    ? undefined
    : 'the redis-server binary is not on the PATH';
}

async function waitForPing(url: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const client = new Redis(url, { lazyConnect: true, retryStrategy: () => null });
    client.on('error', () => undefined);
    try {
      await client.connect();
      if ((await client.ping()) === 'PONG') return;
    } catch {
      // not up yet
    } finally {
      client.disconnect();
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`redis-server at ${url} did not come up`);
}

/** `redis-server` arguments: on 127.0.0.1, persisted only by AOF with `appendfsync`, its files in `dir`. */
export function appendOnlyArgs(dir: string, appendfsync: 'always' | 'everysec'): string[] {
  return [
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'yes',
    '--appendfsync',
    appendfsync,
    '--dir',
    dir,
  ];
}

/** Starts `redis-server` with `--appendonly yes` and the given fsync policy. */
export async function startOwnRedis(
  options: { appendfsync?: 'always' | 'everysec'; extra?: string[] } = {},
): Promise<OwnRedis> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-redis-'));
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess;
  const start = async () => {
    child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        ...appendOnlyArgs(dir, options.appendfsync ?? 'always'),
        ...(options.extra ?? []),
      ],
      { stdio: 'ignore' },
    );
    await waitForPing(url);
  };
  const halt = (signal: 'SIGTERM' | 'SIGKILL') =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill(signal);
    });
  await start();
  return {
    url,
    port,
    async restart(signal = 'SIGTERM') {
      await halt(signal);
      await start();
    },
    async stop() {
      await halt('SIGTERM');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A one-node Redis Cluster owning every slot, and a way to open clients of it. */
export interface OwnCluster {
  url: string;
  /** A `Cluster` client, ready; closed by `stop`. */
  open(): Promise<Cluster>;
  stop(): Promise<void>;
}

/**
 * Starts a one-node Redis Cluster: Cluster refuses a script whose keys span slots, so a store that works on it
 * keeps each script within its run's slot.
 */
export async function startOwnCluster(): Promise<OwnCluster> {
  const server = await startOwnRedis({
    extra: ['--cluster-enabled', 'yes', '--cluster-announce-ip', '127.0.0.1'],
  });
  const admin = new Redis(server.url);
  admin.on('error', () => undefined);
  await admin.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
  while (!String(await admin.call('CLUSTER', 'INFO')).includes('cluster_state:ok'))
    await new Promise((resolve) => setTimeout(resolve, 50));
  admin.disconnect();
  const clusters: Cluster[] = [];
  return {
    url: server.url,
    async open() {
      const cluster = new Cluster([{ host: '127.0.0.1', port: server.port }]);
      cluster.on('error', () => undefined);
      clusters.push(cluster);
      if (cluster.status !== 'ready')
        await new Promise((resolve) => cluster.once('ready', resolve));
      return cluster;
    },
    async stop() {
      for (const cluster of clusters) cluster.disconnect();
      await server.stop();
    },
  };
}
