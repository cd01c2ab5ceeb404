/** The command line of `cairn`: which command, on which run, with which options, and where the store is. */
import { parseArgs } from 'node:util';
import { claimableStatuses, terminalStatuses, type JsonValue, type RunStatus } from '@cairn/sdk';
import { UsageError } from './cli-errors.js';

/** Where the store comes from: a user module, else the environment's DATABASE_URL or REDIS_URL. */
export interface StoreSelection {
  module?: string;
  /** The Postgres schema (`pgStore`'s `schema`). */
  schema?: string;
  /** The Redis key prefix (`redisStore`'s `prefix`). */
  prefix?: string;
  /** A module exporting the payload codec the runs were written with: their payloads are read decoded. */
  codec?: string;
}

/** What to list. */
export interface ListQuery {
  status?: RunStatus[];
  name?: string;
  kind?: string;
  limit?: number;
}

/** One command, with its arguments. */
export type Command =
  | { name: 'help' }
  | { name: 'version' }
  | { name: 'list'; query: ListQuery }
  | { name: 'show' | 'timeline' | 'cancel' | 'discard' | 'resume'; runId: string }
  | { name: 'watch'; runId: string; after: number }
  | { name: 'signal'; runId: string; signal: string; payload: JsonValue; key?: string }
  | { name: 'approve'; runId: string; callId: string; argsHash?: string; by?: string }
  | { name: 'reject'; runId: string; callId: string; reason?: string; by?: string }
  | { name: 'ui'; host?: string; port?: number }
  | { name: 'reencrypt'; query: Omit<ListQuery, 'limit'>; concurrency?: number }
  | { name: 'forget'; target: { subject: string } | { runId: string }; timeoutMs?: number };

/** A parsed command line. */
export interface ParsedCli {
  command: Command;
  json: boolean;
  store: StoreSelection;
}

const flags = {
  module: { type: 'string' },
  schema: { type: 'string' },
  prefix: { type: 'string' },
  codec: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
  status: { type: 'string' },
  name: { type: 'string' },
  kind: { type: 'string' },
  waiting: { type: 'boolean' },
  limit: { type: 'string' },
  after: { type: 'string' },
  payload: { type: 'string' },
  key: { type: 'string' },
  'args-hash': { type: 'string' },
  reason: { type: 'string' },
  by: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  concurrency: { type: 'string' },
  subject: { type: 'string' },
  run: { type: 'string' },
  timeout: { type: 'string' },
} as const;

type Flag = keyof typeof flags;

/** The flags every command takes; each command adds its own. */
const common: readonly Flag[] = ['module', 'schema', 'prefix', 'codec', 'json', 'help', 'version'];

/** Each `runs` subcommand: its positional arguments, and its own flags. */
const subcommands = {
  list: { args: [], flags: ['status', 'name', 'kind', 'waiting', 'limit'] },
  show: { args: ['runId'], flags: [] },
  timeline: { args: ['runId'], flags: [] },
  cancel: { args: ['runId'], flags: [] },
  discard: { args: ['runId'], flags: [] },
  resume: { args: ['runId'], flags: [] },
  watch: { args: ['runId'], flags: ['after'] },
  signal: { args: ['runId', 'name'], flags: ['payload', 'key'] },
  approve: { args: ['runId', 'toolCallId'], flags: ['args-hash', 'by'] },
  reject: { args: ['runId', 'toolCallId'], flags: ['reason', 'by'] },
  reencrypt: { args: [], flags: ['status', 'name', 'kind', 'concurrency'] },
  forget: { args: [], flags: ['subject', 'run', 'timeout'] },
  /** `cairn ui`, the one command outside `runs`. */
  ui: { args: [], flags: ['host', 'port'] },
} as const satisfies Record<string, { args: readonly string[]; flags: readonly Flag[] }>;

/** Every status, from the sdk's own lists: the ones a worker claims, `waiting`, and the final ones. */
const statuses: readonly RunStatus[] = [...claimableStatuses, 'waiting', ...terminalStatuses];

/** Reads `argv` (without node and the script), a flag winning over its variable in `env`; throws `UsageError`. */
export function parseCli(argv: readonly string[], env: NodeJS.ProcessEnv): ParsedCli {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: flags });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  const fromEnv = (name: string): string | undefined => {
    const value = env[name];
    return value === undefined || value === '' ? undefined : value;
  };
  const module = values.module ?? fromEnv('CAIRN_MODULE');
  const schema = values.schema ?? fromEnv('CAIRN_SCHEMA');
  const prefix = values.prefix ?? fromEnv('CAIRN_PREFIX');
  const codec = values.codec ?? fromEnv('CAIRN_CODEC');
  const store: StoreSelection = {
    ...(module === undefined ? {} : { module }),
    ...(schema === undefined ? {} : { schema }),
    ...(prefix === undefined ? {} : { prefix }),
    ...(codec === undefined ? {} : { codec }),
  };
  const json = values.json === true;
  const done = (command: Command): ParsedCli => ({ command, json, store });
  if (values.version === true) return done({ name: 'version' });
  if (values.help === true || positionals.length === 0) return done({ name: 'help' });

  const [group, ...rest] = positionals;
  if (group !== 'runs' && group !== 'ui')
    throw new UsageError(
      `Unknown command "${group}"; the commands are "cairn runs ..." and "cairn ui".`,
    );
  const [sub, ...args] = group === 'ui' ? ['ui', ...rest] : rest;
  if (sub === undefined || !Object.hasOwn(subcommands, sub) || (group === 'runs' && sub === 'ui')) {
    const known = Object.keys(subcommands)
      .filter((name) => name !== 'ui')
      .join(', ');
    throw new UsageError(
      sub === undefined
        ? `Which runs command? One of ${known}.`
        : `Unknown command "runs ${sub}"; one of ${known}.`,
    );
  }
  const spec = subcommands[sub as keyof typeof subcommands];
  for (const [flag, value] of Object.entries(values)) {
    if (
      value !== undefined &&
      !common.includes(flag as Flag) &&
      !(spec.flags as readonly Flag[]).includes(flag as Flag)
    ) {
      throw new UsageError(`"${group === 'ui' ? 'ui' : `runs ${sub}`}" takes no --${flag}.`);
    }
  }
  if (args.length !== spec.args.length) {
    const wanted = spec.args.map((name) => `<${name}>`).join(' ');
    const name = group === 'ui' ? 'ui' : `runs ${sub}`;
    throw new UsageError(`Usage: cairn ${name}${wanted === '' ? '' : ` ${wanted}`} [options]`);
  }
  const runId = args[0] ?? '';
  switch (sub as keyof typeof subcommands) {
    case 'list':
      return done({ name: 'list', query: listQuery(values) });
    case 'ui':
      return done({
        name: 'ui',
        ...(values.host === undefined ? {} : { host: values.host }),
        ...(values.port === undefined ? {} : { port: wholeNumber('port', values.port, 0) }),
      });
    case 'watch':
      return done({ name: 'watch', runId, after: wholeNumber('after', values.after, 0) });
    case 'signal':
      return done({
        name: 'signal',
        runId,
        signal: args[1]!,
        payload: values.payload === undefined ? null : jsonPayload(values.payload),
        ...(values.key === undefined ? {} : { key: values.key }),
      });
    case 'approve':
      return done({
        name: 'approve',
        runId,
        callId: args[1]!,
        ...(values['args-hash'] === undefined ? {} : { argsHash: values['args-hash'] }),
        ...(values.by === undefined ? {} : { by: values.by }),
      });
    case 'reject':
      return done({
        name: 'reject',
        runId,
        callId: args[1]!,
        ...(values.reason === undefined ? {} : { reason: values.reason }),
        ...(values.by === undefined ? {} : { by: values.by }),
      });
    case 'reencrypt':
      return done({
        name: 'reencrypt',
        query: listQuery(values),
        ...(values.concurrency === undefined
          ? {}
          : { concurrency: wholeNumber('concurrency', values.concurrency, 1) }),
      });
    case 'forget': {
      if ((values.subject === undefined) === (values.run === undefined)) {
        throw new UsageError('runs forget takes one of --subject <subject> or --run <runId>.');
      }
      return done({
        name: 'forget',
        target: values.subject === undefined ? { runId: values.run! } : { subject: values.subject },
        ...(values.timeout === undefined
          ? {}
          : { timeoutMs: wholeNumber('timeout', values.timeout, 0) }),
      });
    }
    default:
      return done({ name: sub as 'show' | 'timeline' | 'cancel' | 'discard' | 'resume', runId });
  }
}

function listQuery(values: {
  status?: string;
  name?: string;
  kind?: string;
  waiting?: boolean;
  limit?: string;
}): ListQuery {
  const query: ListQuery = {};
  if (values.status !== undefined) {
    const wanted = values.status.split(',').map((status) => status.trim());
    for (const status of wanted) {
      if (!statuses.includes(status as RunStatus)) {
        throw new UsageError(`--status takes ${statuses.join(', ')}; not "${status}".`);
      }
    }
    query.status = wanted as RunStatus[];
  }
  if (values.waiting === true) {
    // `--waiting` is `--status waiting`; with other statuses it would select nothing.
    if (query.status !== undefined && !query.status.every((status) => status === 'waiting')) {
      throw new UsageError(
        '--waiting lists waiting runs: it does not go with --status of other statuses.',
      );
    }
    query.status = ['waiting'];
  }
  if (values.name !== undefined) query.name = values.name;
  if (values.kind !== undefined) query.kind = values.kind;
  if (values.limit !== undefined) {
    const limit = wholeNumber('limit', values.limit, 1);
    query.limit = limit;
  }
  return query;
}

function wholeNumber(flag: string, value: string | undefined, least: number): number {
  if (value === undefined) return least;
  const number = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(number) || number < least) {
    throw new UsageError(`--${flag} takes a whole number of at least ${least}, not "${value}".`);
  }
  return number;
}

function jsonPayload(text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch (error) {
    throw new UsageError(`--payload is not JSON: ${(error as Error).message}`);
  }
}
