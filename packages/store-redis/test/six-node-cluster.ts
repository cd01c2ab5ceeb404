import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@cairn/testing';
import { Cluster, Redis, type ClusterOptions } from 'ioredis';
import { appendOnlyArgs } from './redis-server.js';

/** One `redis-server` of the cluster: its client port, its cluster bus port, its data directory. */
export interface ClusterNodeProcess {
  port: number;
  busPort: number;
  dir: string;
  /** The node's cluster id, read once the cluster is formed. */
  id: string;
}

/** A master as the cluster sees it now. */
export interface ClusterMaster {
  port: number;
  id: string;
  /** How many of the 16 384 slots it serves. */
  slots: number;
  /** Its slot ranges, `[first, last]` inclusive. */
  ranges: Array<[number, number]>;
}

/** A 3-master, 3-replica Redis Cluster of `redis-server` children of the test, each with AOF `always`. */
export interface SixNodeCluster {
  readonly nodes: readonly ClusterNodeProcess[];
  /** A ready `Cluster` client with `clusterClientOptions`; closed by `stop`. */
  open(overrides?: ClusterOptions): Promise<Cluster>;
  /** The masters, as a live node reports them. */
  masters(): Promise<ClusterMaster[]>;
  /** SIGKILLs the master on `port` and resolves once its replica serves its slots and the cluster is ok. */
  killMaster(port: number): Promise<{ promoted: number; killedAt: number; promotedAt: number }>;
  /** Starts a killed node again on its port and data; it rejoins, as a replica of the master that replaced it. */
  restart(port: number): Promise<void>;
  /** Moves `slots` slots, with their keys, from one master to another while clients keep using them. */
  reshard(options: { from: number; to: number; slots: number }): Promise<void>;
  /** What each node says of the cluster, and the end of its log: for a test that failed, to say why. */
  diagnose(): Promise<string>;
  /** A line per node: running or not, its role, config epoch, slot count, `cluster_state` and replication link. */
  summary(): Promise<string>;
  /** Stops every node, closes every client, deletes every data directory. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * How long the cluster waits before it deems a silent master failed: a replica is promoted a little after. Not
 * shorter: on a busy two-core CI machine, with six servers fsyncing every write, a live node can be silent for a
 * second or two, and a cluster that fails over a master nobody killed is not the failover under test.
 */
export const clusterNodeTimeoutMs = 3_000;

/**
 * The `Cluster` options this package's README recommends for Cairn: keep retrying a command through a failover
 * and a resharding (MOVED, ASK, TRYAGAIN, CLUSTERDOWN) for a few seconds rather than failing it at once, and
 * refresh the slot map promptly. The store bounds every call by its own `timeoutMs` either way.
 */
export const clusterClientOptions: ClusterOptions = {
  // Every retry below spends one redirection, and a MOVED to the dead master, then its closed connection, spend
  // two per round: 64 at 300 ms is about 10 s of retrying, the store's own `timeoutMs`, where the default 16 at
  // 100 ms gives up after under 2 s, before a replica can be promoted (node timeout + election, 4 to 6 s here).
  maxRedirections: 64,
  // CLUSTERDOWN while the failed master's slots have no owner: retry until the replica is promoted.
  retryDelayOnClusterDown: 300,
  // A node's connection closed: refresh the slot map and retry on whoever serves the slot now.
  retryDelayOnFailover: 300,
  // TRYAGAIN: a multi-key command on a slot being migrated.
  retryDelayOnTryAgain: 100,
  slotsRefreshTimeout: 2_000,
  slotsRefreshInterval: 5_000,
  // A command for a node that is down waits in the queue for the slot map to name its successor.
  enableOfflineQueue: true,
  redisOptions: { connectTimeout: 2_000, maxRetriesPerRequest: 2 },
};

const logFile = (node: ClusterNodeProcess) => join(node.dir, 'redis.log');

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `redis-cli` with `args`; rejects with its output when it exits non-zero. */
function redisCli(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('redis-cli', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0
        ? resolve(output)
        : reject(new Error(`redis-cli ${args.join(' ')} exited ${code}:\n${output}`)),
    );
  });
}

/** Asks one node a command on a short-lived connection; undefined when it does not answer. */
async function ask(port: number, ...command: string[]): Promise<string | undefined> {
  const client = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return String(await client.call(command[0]!, ...command.slice(1)));
  } catch {
    return undefined;
  } finally {
    client.disconnect();
  }
}

/** Parses `CLUSTER NODES` into its masters that are not failed. */
function parseMasters(nodes: string): ClusterMaster[] {
  const masters: ClusterMaster[] = [];
  for (const line of nodes.trim().split('\n')) {
    const [id, address, flags, , , , , , ...slotFields] = line.split(' ');
    if (id === undefined || flags === undefined || address === undefined) continue;
    if (!flags.split(',').includes('master') || flags.includes('fail')) continue;
    const ranges: Array<[number, number]> = [];
    for (const field of slotFields) {
      if (field.startsWith('[')) continue; // a slot being imported or migrated
      const [first, last] = field.split('-').map(Number);
      ranges.push([first!, last ?? first!]);
    }
    const slots = ranges.reduce((sum, [first, last]) => sum + last - first + 1, 0);
    if (slots === 0) continue;
    masters.push({ id, port: Number(address.split(':')[1]!.split('@')[0]), slots, ranges });
  }
  return masters.sort((a, b) => a.port - b.port);
}

/** Starts six nodes, forms the cluster and waits until every node says `cluster_state:ok`. */
export async function startSixNodeCluster(): Promise<SixNodeCluster> {
  const nodes: ClusterNodeProcess[] = [];
  const processes = new Map<number, ChildProcess>();
  const clients: Cluster[] = [];
  let stopped = false;

  const launch = (node: ClusterNodeProcess) => {
    // The shell becomes the server (`exec`, so its pid is the server's and a signal reaches it), leaving behind
    // a watcher that SIGKILLs it once its stdin closes: when this process ends, however it ends.
    const child = spawn(
      'sh',
      [
        '-c',
        // (A background list's stdin is /dev/null unless redirected: the watcher reads the pipe as fd 3.)
        'exec 3<&0; (cat <&3 > /dev/null; kill -9 $$ 2> /dev/null) & exec redis-server "$@" 3<&-',
        'redis-server',
        '--port',
        String(node.port),
        // Ports above 55 535 have no room for the default bus port (port + 10 000): name it.
        '--cluster-port',
        String(node.busPort),
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-node-timeout',
        String(clusterNodeTimeoutMs),
        '--cluster-announce-ip',
        '127.0.0.1',
        // A replica that never synced is never promoted: start its first sync at once, not after 5 s.
        '--repl-diskless-sync-delay',
        '0',
        '--logfile',
        logFile(node),
        ...appendOnlyArgs(node.dir, 'always'),
      ],
      { stdio: ['pipe', 'ignore', 'ignore'] },
    );
    child.once('exit', () => child.stdin?.end());
    processes.set(node.port, child);
  };
  const halt = (port: number, signal: 'SIGTERM' | 'SIGKILL') =>
    new Promise<void>((resolve) => {
      const child = processes.get(port);
      if (child === undefined || child.exitCode !== null || child.signalCode !== null)
        return resolve();
      child.once('exit', () => resolve());
      child.kill(signal);
    });
  /** Each live node's `cluster_state`, for an error that says where the cluster is stuck. */
  const states = async () => {
    const lines: string[] = [];
    for (const node of alive()) {
      const info = await ask(node.port, 'CLUSTER', 'INFO');
      lines.push(`${node.port}: ${/cluster_state:\w+/.exec(info ?? '')?.[0] ?? 'no answer'}`);
    }
    return lines.join(', ');
  };
  const diagnose = async () => {
    const lines: string[] = [];
    for (const node of nodes) {
      const up = alive().includes(node);
      const view = up ? await ask(node.port, 'CLUSTER', 'NODES') : undefined;
      lines.push(
        `node ${node.port} (bus ${node.busPort}) ${up ? 'running' : 'not running'}; CLUSTER NODES:`,
      );
      lines.push(
        ...(view ?? 'no answer')
          .trim()
          .split('\n')
          .map((line) => `    ${line}`),
      );
      const log = await readFile(logFile(node), 'utf8').catch((error: unknown) => String(error));
      lines.push(
        '  log (last 25 lines):',
        ...log
          .trim()
          .split('\n')
          .slice(-25)
          .map((line) => `    ${line}`),
      );
    }
    return lines.join('\n');
  };
  const summary = async () => {
    const lines: string[] = [];
    for (const node of nodes) {
      if (!alive().includes(node)) {
        lines.push(`${node.port}: not running`);
        continue;
      }
      const view = await ask(node.port, 'CLUSTER', 'NODES');
      const own = view?.split('\n').find((line) => line.includes('myself'));
      const [, , flags, master, , , epoch, link, ...slots] = own?.split(' ') ?? [];
      const info = await ask(node.port, 'CLUSTER', 'INFO');
      const replication = await ask(node.port, 'INFO', 'replication');
      lines.push(
        `${node.port}: ${flags ?? 'no answer'} of ${master ?? '?'} epoch ${epoch ?? '?'} ${link ?? ''}` +
          ` slots ${slots.filter((field) => !field.startsWith('[')).join(',') || 'none'}` +
          ` ${/cluster_state:\w+/.exec(info ?? '')?.[0] ?? 'no state'}` +
          ` ${/master_link_status:\w+/.exec(replication ?? '')?.[0] ?? ''}`,
      );
    }
    return lines.join('\n');
  };
  const waitUntil = async (what: string, check: () => Promise<boolean>, ms = 60_000) => {
    const deadline = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > deadline)
        // The short view last: a report that keeps only the end of a long message still shows it.
        throw new Error(
          `the cluster did not reach: ${what} (${await states()})\n${await diagnose()}\nin short:\n${await summary()}`,
        );
      await sleep(50);
    }
  };
  const alive = () =>
    nodes.filter((node) => {
      const child = processes.get(node.port);
      return child !== undefined && child.exitCode === null && child.signalCode === null;
    });
  const allOk = async () => {
    for (const node of alive()) {
      if (!(await ask(node.port, 'CLUSTER', 'INFO'))?.includes('cluster_state:ok')) return false;
    }
    return true;
  };
  const masters = async () => {
    for (const node of alive()) {
      const reply = await ask(node.port, 'CLUSTER', 'NODES');
      if (reply !== undefined) return parseMasters(reply);
    }
    throw new Error('no node of the cluster answers');
  };

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    for (const client of clients.splice(0)) client.disconnect();
    await Promise.all(nodes.map((node) => halt(node.port, 'SIGKILL')));
    await Promise.all(nodes.map((node) => rm(node.dir, { recursive: true, force: true })));
  };

  try {
    for (let i = 0; i < 6; i += 1) {
      const dir = await mkdtemp(join(tmpdir(), 'cairn-cluster-'));
      nodes.push({ port: await freePort(), busPort: await freePort(), dir, id: '' });
      launch(nodes[i]!);
    }
    for (const node of nodes) {
      await waitUntil(
        `node ${node.port} up`,
        async () => (await ask(node.port, 'PING')) === 'PONG',
      );
    }
    await redisCli([
      '--cluster',
      'create',
      ...nodes.map((node) => `127.0.0.1:${node.port}`),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ]);
    await waitUntil('cluster_state:ok on every node', allOk);
    for (const node of nodes) node.id = String(await ask(node.port, 'CLUSTER', 'MYID'));
    await waitUntil('three masters seen', async () => (await masters()).length === 3);
    const masterPorts = new Set((await masters()).map((master) => master.port));
    for (const node of nodes.filter((each) => !masterPorts.has(each.port))) {
      await waitUntil(`replica ${node.port} in sync`, async () =>
        Boolean((await ask(node.port, 'INFO', 'replication'))?.includes('master_link_status:up')),
      );
    }
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    nodes,
    async open(overrides = {}) {
      const client = new Cluster(
        nodes.map((node) => ({ host: '127.0.0.1', port: node.port })),
        // ioredis's own option types disagree under `exactOptionalPropertyTypes`.
        { ...clusterClientOptions, ...overrides } as ConstructorParameters<typeof Cluster>[1],
      );
      client.on('error', () => undefined);
      clients.push(client);
      if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
      return client;
    },
    masters,
    async killMaster(port) {
      const before = await masters();
      const victim = before.find((master) => master.port === port);
      if (victim === undefined) throw new Error(`${port} is not a master`);
      const killedAt = Date.now();
      await halt(port, 'SIGKILL');
      let promoted = 0;
      await waitUntil(
        `a replica of ${port} promoted`,
        async () => {
          const now = await masters().catch(() => []);
          const heir = now.find(
            (master) => master.port !== port && !before.some((old) => old.port === master.port),
          );
          if (heir === undefined) return false;
          promoted = heir.port;
          return true;
        },
        60_000,
      );
      const promotedAt = Date.now();
      await waitUntil('cluster_state:ok after the failover', allOk);
      return { promoted, killedAt, promotedAt };
    },
    async restart(port) {
      const node = nodes.find((each) => each.port === port);
      if (node === undefined) throw new Error(`no node on ${port}`);
      await halt(port, 'SIGKILL');
      launch(node);
      await waitUntil(`node ${port} up`, async () => (await ask(port, 'PING')) === 'PONG');
      await waitUntil(`node ${port} rejoined as a replica`, async () =>
        Boolean((await ask(port, 'INFO', 'replication'))?.includes('master_link_status:up')),
      );
      await waitUntil('cluster_state:ok after the restart', allOk);
    },
    async reshard({ from, to, slots }) {
      const ids = new Map(nodes.map((node) => [node.port, node.id]));
      await redisCli([
        '--cluster',
        'reshard',
        `127.0.0.1:${to}`,
        '--cluster-from',
        ids.get(from)!,
        '--cluster-to',
        ids.get(to)!,
        '--cluster-slots',
        String(slots),
        '--cluster-yes',
        '--cluster-pipeline',
        '100',
      ]);
    },
    diagnose,
    summary,
    stop,
  };
}
