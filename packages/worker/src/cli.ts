#!/usr/bin/env node
/**
 * `cairn-worker <module>`: the long-lived worker process of a deployment. It imports a module that exports
 * a store and definitions, runs `createWorker` on them until SIGTERM or SIGINT, hands its runs over, calls
 * the module's `close()` and exits 0.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { isCairnError, type DurableStore } from '@cairn/sdk';
import type { Runnable } from './definitions.js';
import type { WorkerEvent } from './events.js';
import { createWorker, type WorkerOptions } from './worker.js';

const usage = `Usage: cairn-worker [options] <module>
       cairn-worker migrate <module>     run the store's migrations (store.migrate()), then exit

Runs a Cairn worker until SIGTERM or SIGINT. <module> is the path of an ES module (or CAIRN_MODULE) that
exports, as named exports or as properties of its default export (which may also be a function returning
them, sync or async):
  store         the DurableStore to claim runs from (pgStore, redisStore, memoryStore)   required
  agents        the agents this worker performs (an array, or an object of them)
  planners      the planners this worker performs
  definitions   other durable definitions ({ kind, name, definition })
  close         optional: called once the worker has handed its runs over (end your pools here)

Options (a flag wins over its environment variable):
  --concurrency <n>        CAIRN_CONCURRENCY          runs performed at once (default 10)
  --lease-ms <ms>          CAIRN_LEASE_MS             lease length (default 30000)
  --heartbeat-ms <ms>      CAIRN_HEARTBEAT_MS         lease renewal interval (default lease / 3)
  --poll-ms <ms>           CAIRN_POLL_MS              fallback poll for new work (default 1000)
  --owner <name>           CAIRN_OWNER                lease owner (default host:pid:random)
  --max-recoveries <n>     CAIRN_MAX_RECOVERIES       takeovers before a run is dead-lettered (default 5)
  --takeover-on-restart    CAIRN_TAKEOVER_ON_RESTART  take back at once the runs still leased to --owner;
                                                      only with an owner that names one process (true/false)
  --log <format>           CAIRN_LOG                  json (one line per event, default), text or silent
  -h, --help                                          print this help
  -v, --version                                       print the version

On SIGTERM or SIGINT the worker stops claiming, hands its runs over at their next boundary, calls close()
and exits 0; a second signal exits at once with 130. Exit codes: 1 if the module or the store fails at
start (a schema that is not migrated: run cairn-worker migrate first), 2 on a usage error.
A TypeScript module needs a loader on Node 20: NODE_OPTIONS="--import tsx" cairn-worker ./worker.ts`;

type LogFormat = 'json' | 'text' | 'silent';

interface CliOptions {
  /** `run` a worker, or `migrate` the store. */
  command: 'run' | 'migrate';
  module: string;
  log: LogFormat;
  worker: Pick<
    WorkerOptions,
    | 'concurrency'
    | 'leaseMs'
    | 'heartbeatMs'
    | 'pollMs'
    | 'owner'
    | 'maxRecoveries'
    | 'takeoverOnRestart'
  >;
}

/** What the user module provides. */
interface WorkerModule {
  store: DurableStore;
  agents: Runnable[];
  planners: Runnable[];
  definitions: Runnable[];
  close?: () => unknown;
}

class UsageError extends Error {}

/** Each option's environment variable. */
const environment = {
  concurrency: 'CAIRN_CONCURRENCY',
  'lease-ms': 'CAIRN_LEASE_MS',
  'heartbeat-ms': 'CAIRN_HEARTBEAT_MS',
  'poll-ms': 'CAIRN_POLL_MS',
  owner: 'CAIRN_OWNER',
  'max-recoveries': 'CAIRN_MAX_RECOVERIES',
  'takeover-on-restart': 'CAIRN_TAKEOVER_ON_RESTART',
  log: 'CAIRN_LOG',
} as const;

const flags = {
  concurrency: { type: 'string' },
  'lease-ms': { type: 'string' },
  'heartbeat-ms': { type: 'string' },
  'poll-ms': { type: 'string' },
  owner: { type: 'string' },
  'max-recoveries': { type: 'string' },
  'takeover-on-restart': { type: 'boolean' },
  log: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

function parseCli(argv: string[], env: NodeJS.ProcessEnv): CliOptions | 'help' | 'version' {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: flags });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help === true) return 'help';
  if (values.version === true) return 'version';
  const command = positionals[0] === 'migrate' ? 'migrate' : 'run';
  if (command === 'migrate') positionals.shift();
  if (positionals.length > 1) throw new UsageError(`One module, not ${positionals.length}.`);

  const setting = (name: keyof typeof environment): string | boolean | undefined => {
    const value = values[name];
    if (value !== undefined) return value;
    const fromEnv = env[environment[name]];
    return fromEnv === undefined || fromEnv === '' ? undefined : fromEnv;
  };
  const integer = (name: keyof typeof environment): number | undefined => {
    const value = setting(name);
    if (value === undefined) return undefined;
    const number = Number(value);
    if (typeof value !== 'string' || !/^\d+$/.test(value.trim()) || number < 1) {
      throw new UsageError(
        `--${name} (${environment[name]}) must be a positive integer, not "${String(value)}".`,
      );
    }
    return number;
  };
  const boolean = (name: keyof typeof environment): boolean | undefined => {
    const value = setting(name);
    if (typeof value !== 'string') return value;
    if (/^(1|true|yes)$/i.test(value)) return true;
    if (/^(0|false|no)$/i.test(value)) return false;
    throw new UsageError(`${environment[name]} must be true or false, not "${value}".`);
  };

  const module = positionals[0] ?? env.CAIRN_MODULE;
  if (module === undefined || module === '') {
    throw new UsageError('Which module? Pass its path, or set CAIRN_MODULE.');
  }
  const log = setting('log') ?? 'json';
  if (log !== 'json' && log !== 'text' && log !== 'silent') {
    throw new UsageError(`--log (CAIRN_LOG) is json, text or silent, not "${String(log)}".`);
  }
  const owner = setting('owner');
  const worker: CliOptions['worker'] = {};
  const numbers = {
    concurrency: integer('concurrency'),
    leaseMs: integer('lease-ms'),
    heartbeatMs: integer('heartbeat-ms'),
    pollMs: integer('poll-ms'),
    maxRecoveries: integer('max-recoveries'),
  };
  for (const [key, value] of Object.entries(numbers)) {
    if (value !== undefined) worker[key as keyof typeof numbers] = value;
  }
  if (typeof owner === 'string') worker.owner = owner;
  const takeover = boolean('takeover-on-restart');
  if (takeover !== undefined) worker.takeoverOnRestart = takeover;
  return { command, module, log, worker };
}

async function loadModule(path: string): Promise<WorkerModule> {
  const file = resolve(path);
  if (!existsSync(file)) throw new UsageError(`No module at ${file}.`);
  const imported = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  let source: unknown = imported.default ?? imported;
  if (typeof source === 'function') source = await (source as () => unknown)();
  if (typeof source !== 'object' || source === null) {
    throw new Error(`${path} exports no object of { store, agents, planners }.`);
  }
  // Named exports next to a default export object: the default's properties win.
  const exports = { ...imported, ...(source as Record<string, unknown>) };
  const store = exports.store as Partial<DurableStore> | undefined;
  if (
    typeof store !== 'object' ||
    store === null ||
    typeof store.claimable !== 'function' ||
    typeof store.acquire !== 'function'
  ) {
    throw new Error(
      `${path} exports no store (a DurableStore such as pgStore(...) or memoryStore()).`,
    );
  }
  const runnables = (key: 'agents' | 'planners' | 'definitions'): Runnable[] => {
    const value = exports[key];
    if (value === undefined) return [];
    const list = Array.isArray(value)
      ? (value as unknown[])
      : typeof value === 'object' && value !== null
        ? Object.values(value)
        : [value];
    for (const item of list) {
      const runnable = item as Partial<Runnable> | null;
      if (
        typeof runnable?.kind !== 'string' ||
        typeof runnable.name !== 'string' ||
        typeof runnable.definition !== 'object'
      ) {
        throw new Error(`${path}: "${key}" holds something that is not an agent or a planner.`);
      }
    }
    return list as Runnable[];
  };
  const loaded: WorkerModule = {
    store: store as DurableStore,
    agents: runnables('agents'),
    planners: runnables('planners'),
    definitions: runnables('definitions'),
  };
  if (loaded.agents.length + loaded.planners.length + loaded.definitions.length === 0) {
    throw new Error(`${path} exports no agents, planners or definitions for the worker to run.`);
  }
  if (typeof exports.close === 'function') loaded.close = exports.close as () => unknown;
  return loaded;
}

function logger(format: LogFormat): (event: WorkerEvent) => void {
  if (format === 'silent') return () => undefined;
  return (event) => {
    const time = new Date().toISOString();
    if (format === 'json') {
      process.stdout.write(`${JSON.stringify({ time, ...event })}\n`);
      return;
    }
    const { type, ...fields } = event;
    const rest = Object.entries(fields)
      .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
      .join(' ');
    process.stdout.write(`${time} ${type}${rest === '' ? '' : ` ${rest}`}\n`);
  };
}

async function main(): Promise<void> {
  let options;
  try {
    options = parseCli(process.argv.slice(2), process.env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`cairn-worker: ${error.message}\nSee cairn-worker --help.\n`);
    process.exitCode = 2;
    return;
  }
  if (options === 'help') {
    process.stdout.write(`${usage}\n`);
    return;
  }
  if (options === 'version') {
    const manifest = JSON.parse(
      readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
    ) as { version: string };
    process.stdout.write(`${manifest.version}\n`);
    return;
  }

  // A signal during start-up ends the process once the module is loaded, before anything is claimed.
  let stopRequested = false;
  const early = () => {
    if (stopRequested) process.exit(130);
    stopRequested = true;
  };
  process.on('SIGTERM', early).on('SIGINT', early);

  let loaded: WorkerModule;
  try {
    loaded = await loadModule(options.module);
  } catch (error) {
    process.stderr.write(`cairn-worker: ${describe(error)}\n`);
    process.exitCode = error instanceof UsageError ? 2 : 1;
    process.off('SIGTERM', early).off('SIGINT', early);
    return;
  }
  const closeModule = async () => {
    try {
      await loaded.close?.();
    } catch (error) {
      process.stderr.write(`cairn-worker: close() failed: ${describe(error)}\n`);
      process.exitCode = 1;
    }
  };
  if (stopRequested) {
    await closeModule();
    return;
  }
  if (options.command === 'migrate') {
    await migrate(loaded.store);
    await closeModule();
    return;
  }

  // The process's signals are this command's: the first hands the runs over, a second exits at once.
  const log = logger(options.log);
  const worker = createWorker({
    ...options.worker,
    store: loaded.store,
    agents: loaded.agents,
    planners: loaded.planners,
    definitions: loaded.definitions,
    shutdownSignals: [],
    onEvent: (event) => {
      log(event);
      // A schema that is not migrated will not become so by waiting: exit 1 as --help says, with what to run.
      if (event.type === 'error' && event.code === 'SCHEMA_MISMATCH' && stopping === undefined) {
        process.stderr.write(
          `cairn-worker: ${event.code}: ${event.message}\nRun \`cairn-worker migrate ${options.module}\` first.\n`,
        );
        process.exitCode = 1;
        stop();
      }
    },
  });
  process.off('SIGTERM', early).off('SIGINT', early);
  // The worker's timers do not hold the process (a memory store holds no socket either): the command runs
  // until it is stopped.
  const keepAlive = setInterval(() => undefined, 1 << 30);
  let stopping: Promise<void> | undefined;
  const stop = (signal?: NodeJS.Signals) => {
    if (stopping !== undefined) process.exit(130);
    log({ type: 'closing', ...(signal === undefined ? {} : { signal }) });
    stopping = (async () => {
      await worker.close();
      clearInterval(keepAlive);
      await closeModule();
      // Whatever the module left open (a pool it did not end) must not keep a stopped worker alive.
      setTimeout(() => process.exit(), 2_000).unref();
    })();
  };
  process.on('SIGTERM', stop).on('SIGINT', stop);
  try {
    await worker.start();
  } catch (error) {
    process.stderr.write(`cairn-worker: the worker failed to start: ${describe(error)}\n`);
    process.exitCode = 1;
    process.off('SIGTERM', stop).off('SIGINT', stop);
    clearInterval(keepAlive);
    await worker.close();
    await closeModule();
  }
}

/** `cairn-worker migrate`: the store's migrations, or nothing for a store that has none. Exit 1 on failure. */
async function migrate(store: DurableStore): Promise<void> {
  const migrations = (store as { migrate?: () => Promise<unknown> }).migrate;
  try {
    if (typeof migrations !== 'function') {
      process.stdout.write('cairn-worker: this store has no migrations.\n');
      return;
    }
    await migrations.call(store);
    process.stdout.write('cairn-worker: the store is migrated.\n');
  } catch (error) {
    process.stderr.write(`cairn-worker: migrate failed: ${describe(error)}\n`);
    process.exitCode = 1;
  }
}

function describe(error: unknown): string {
  if (isCairnError(error)) return `${error.code}: ${error.message}`;
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

await main();
