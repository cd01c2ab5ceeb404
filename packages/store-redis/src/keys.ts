import { CairnError, type RunStatus } from '@cairn/sdk';

/** Every status a run can be in: one index key each. Adding a status to the sdk fails the check below. */
export const allStatuses = [
  'queued',
  'running',
  'waiting',
  'suspended',
  'completed',
  'failed',
  'cancelled',
  'dead_lettered',
] as const satisfies readonly RunStatus[];

type Missing = Exclude<RunStatus, (typeof allStatuses)[number]>;
const everyStatusIndexed: [Missing] extends [never] ? true : Missing = true;
void everyStatusIndexed;

/**
 * How many buckets runs are spread over. A bucket is one hash tag, so one Cluster slot: a run's keys and its
 * bucket's indexes share it, and every script updates the indexes with the run. 64 spreads the indexes over
 * up to 64 masters while a claim poll (one script per bucket) stays cheap. Changing it moves every run: it is
 * part of the key layout, never an option.
 */
export const bucketCount = 64;

const utf8 = new TextEncoder();

/** A run's bucket: 32-bit FNV-1a of the id's UTF-8 bytes, modulo `bucketCount`; stable across processes. */
export function bucketOf(runId: string): number {
  let hash = 0x811c9dc5;
  for (const byte of utf8.encode(runId)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % bucketCount;
}

/** The keys of one run, all under its bucket's hash tag so one Lua script may touch them on Redis Cluster. */
export interface RunKeys {
  run: string;
  journal: string;
  lease: string;
  /** The set of the run's child run ids, so deleting the run can find them. */
  children: string;
  /**
   * The run's mailbox, a hash: `sig:<seq>` the signal's JSON and `name:<seq>` its name while no checkpoint
   * consumed it, and `key:<idempotency key>` the seq it was first accepted under, kept for the incarnation.
   */
  mailbox: string;
  /**
   * The run's stream log, a Redis Stream: each chunk an entry of id `<position>-0` with fields `unit`, `part`
   * (its JSON) and `at`.
   */
  stream: string;
}

/** How the store names its keys under one prefix. */
export interface KeySpace {
  prefix: string;
  run(runId: string): RunKeys;
  /** The sorted set of the runs of `bucket` in `status`, scored by creation order. */
  index(bucket: number, status: RunStatus): string;
  /** The sorted set of the claimable root runs of `bucket`, scored by when each can be claimed (µs). */
  claimable(bucket: number): string;
  /**
   * The sorted set of the waiting root runs of `bucket` that wait for a time, scored by that time (ms on the
   * clock of the runtime that wrote the wait, which is why they are not in the claimable set).
   */
  waits(bucket: number): string;
  /**
   * The index keys of `bucket`: its status indexes in the order of `allStatuses`, then its claimable set, then
   * its waits set.
   */
  bucketIndexes(bucket: number): string[];
  /**
   * The sorted set of the store instances that hold runs of `bucket` and keep a liveness, each scored by when
   * its liveness ends (ms, server clock) unless it renews it.
   */
  live(bucket: number): string;
  /**
   * The sorted set of the runs of `bucket` held by instances that keep a liveness: members `<instance>\0<run id>`,
   * all scored 0, so one instance's runs are one lexicographic range.
   */
  held(bucket: number): string;
  /** What a run key of `bucket` starts with; the run id follows. */
  runKeyPrefix(bucket: number, kind: keyof RunKeys): string;
  /** The pub/sub channel that announces runs that may have become claimable. */
  channel: string;
}

/**
 * Builds the key space of `prefix`; a prefix holding a brace would move the hash tag, so it is refused. The
 * bucket's tag `{b<n>}` is the key's first braces, so the run id after it, whatever it holds (braces, `%`,
 * any length), never changes the slot; the word before the id keeps a run's keys apart from the indexes.
 */
export function keySpace(prefix: string): KeySpace {
  if (prefix === '' || /[{}]/.test(prefix)) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `The Redis key prefix must be non-empty and hold no "{" or "}", got "${prefix}".`,
    );
  }
  const tag = (bucket: number) => `${prefix}:{b${bucket}}`;
  const index = (bucket: number, status: RunStatus) => `${tag(bucket)}:index:${status}`;
  const claimable = (bucket: number) => `${tag(bucket)}:claimable`;
  const waits = (bucket: number) => `${tag(bucket)}:waits`;
  const runKeyPrefix = (bucket: number, kind: keyof RunKeys) => `${tag(bucket)}:${kind}:`;
  return {
    prefix,
    run(runId) {
      const bucket = bucketOf(runId);
      return {
        run: runKeyPrefix(bucket, 'run') + runId,
        journal: runKeyPrefix(bucket, 'journal') + runId,
        lease: runKeyPrefix(bucket, 'lease') + runId,
        children: runKeyPrefix(bucket, 'children') + runId,
        mailbox: runKeyPrefix(bucket, 'mailbox') + runId,
        stream: runKeyPrefix(bucket, 'stream') + runId,
      };
    },
    index,
    claimable,
    waits,
    bucketIndexes: (bucket) => [
      ...allStatuses.map((s) => index(bucket, s)),
      claimable(bucket),
      waits(bucket),
    ],
    live: (bucket) => `${tag(bucket)}:live`,
    held: (bucket) => `${tag(bucket)}:held`,
    runKeyPrefix,
    channel: `${prefix}:work`,
  };
}
