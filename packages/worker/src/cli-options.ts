/**
 * The command line of `cairn-worker`: its usage text, and its flags and their CAIRN_* variables parsed into
 * options.
 */
import { parseArgs } from 'node:util';
import type { WorkerOptions } from './worker.js';

export const usage = `Usage: cairn-worker [options] <module>
       cairn-worker migrate <module>     run the store's migrations (store.migrate()), then exit

Runs a Cairn worker until SIGTERM or SIGINT. <module> is the path of an ES module (or CAIRN_MODULE) that
exports, as named exports or as properties of its default export (which may also be a function returning
them, sync or async):
  store         the DurableStore to claim runs from (pgStore, redisStore, memoryStore)   required
  agents        the agents this worker performs (an array, or an object of them)
  planners      the planners this worker performs
  definitions   other durable definitions ({ kind, name, definition })
  close         optional: called once the worker has handed its runs over (end your pools here);
                then the store's own connections are closed (store.close())

Options (a flag wins over its environment variable):
  --concurrency <n>        CAIRN_CONCURRENCY          runs performed at once (default 10)
  --lease-ms <ms>          CAIRN_LEASE_MS             lease length (default 30000)
  --heartbeat-ms <ms>      CAIRN_HEARTBEAT_MS         lease renewal interval (default lease / 3)
  --poll-ms <ms>           CAIRN_POLL_MS              fallback poll for new work (default 1000)
  --owner <name>           CAIRN_OWNER                lease owner (default host:pid:random)
  --max-recoveries <n>     CAIRN_MAX_RECOVERIES       takeovers before a run is dead-lettered (default 5)
  --max-stalls <n>         CAIRN_MAX_STALLS           attempts in a row that end in an error before the run
                                                      goes on, after which it is dead-lettered (default 5)
  --takeover-on-restart    CAIRN_TAKEOVER_ON_RESTART  take back at once the runs still leased to --owner;
                                                      only with an owner that names one process (true/false)
  --log <format>           CAIRN_LOG                  json (one line per event, default), text or silent
  -h, --help                                          print this help
  -v, --version                                       print the version

On SIGTERM or SIGINT the worker stops claiming, hands its runs over at their next boundary, calls close()
and exits 0; a second signal exits at once with 130. Started through npm (npx, npm exec, npm run), it also
does so when its parent exits: npm signals only the shell it runs commands in, and dash (/bin/sh on Debian
and Ubuntu) does not pass the signal on. Exit codes: 1 if the module or the store fails at start (a schema
that is not migrated: run cairn-worker migrate first), 2 on a usage error.
A TypeScript module needs a loader on Node 22 before 22.18: NODE_OPTIONS="--import tsx" cairn-worker ./worker.ts`;

export type LogFormat = 'json' | 'text' | 'silent';

/** What the command line asks for. */
export interface CliOptions {
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
    | 'maxStalls'
    | 'takeoverOnRestart'
  >;
}

/** A command line or a module path that cannot be used: exit 2. */
export class UsageError extends Error {}

/** Each option's environment variable. */
const environment = {
  concurrency: 'CAIRN_CONCURRENCY',
  'lease-ms': 'CAIRN_LEASE_MS',
  'heartbeat-ms': 'CAIRN_HEARTBEAT_MS',
  'poll-ms': 'CAIRN_POLL_MS',
  owner: 'CAIRN_OWNER',
  'max-recoveries': 'CAIRN_MAX_RECOVERIES',
  'max-stalls': 'CAIRN_MAX_STALLS',
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
  'max-stalls': { type: 'string' },
  'takeover-on-restart': { type: 'boolean' },
  log: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

/** The options of `argv`, a flag winning over its variable in `env`; throws `UsageError`. */
export function parseCli(argv: string[], env: NodeJS.ProcessEnv): CliOptions | 'help' | 'version' {
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
    maxStalls: integer('max-stalls'),
  };
  for (const [key, value] of Object.entries(numbers)) {
    if (value !== undefined) worker[key as keyof typeof numbers] = value;
  }
  if (typeof owner === 'string') worker.owner = owner;
  const takeover = boolean('takeover-on-restart');
  if (takeover !== undefined) worker.takeoverOnRestart = takeover;
  return { command, module, log, worker };
}
