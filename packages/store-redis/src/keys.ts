import { CairnError, type RunStatus } from '@cairn/sdk';

/** Every status a run can be in: one index key each. Adding a status to the sdk fails the check below. */
export const allStatuses = [
  'queued',
  'running',
  'suspended',
  'completed',
  'failed',
  'cancelled',
  'dead_lettered',
] as const satisfies readonly RunStatus[];

type Missing = Exclude<RunStatus, (typeof allStatuses)[number]>;
const everyStatusIndexed: [Missing] extends [never] ? true : Missing = true;
void everyStatusIndexed;

/** The keys of one run, all under the same hash tag so one Lua script may touch them on Redis Cluster. */
export interface RunKeys {
  run: string;
  journal: string;
  lease: string;
  /** The set of the run's child run ids, so deleting the run can find them. */
  children: string;
}

/** How the store names its keys under one prefix. */
export interface KeySpace {
  prefix: string;
  run(runId: string): RunKeys;
  /** The sorted set of the runs in `status`, scored by creation order. */
  index(status: RunStatus): string;
  /** Every index key, in the order of `allStatuses`. */
  indexes(): string[];
  /** The pub/sub channel that announces runs that may have become claimable. */
  channel: string;
}

/**
 * The hash tag of a run: its id with `%`, `{` and `}` escaped, so the tag is never cut short by a brace in
 * the id and two ids never share a tag by accident. The empty id gets `%`, which no escaped id can be.
 */
export function hashTag(runId: string): string {
  if (runId === '') return '%';
  return runId.replace(/[%{}]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** Builds the key space of `prefix`; a prefix holding a brace would move the hash tag, so it is refused. */
export function keySpace(prefix: string): KeySpace {
  if (prefix === '' || /[{}]/.test(prefix)) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `The Redis key prefix must be non-empty and hold no "{" or "}", got "${prefix}".`,
    );
  }
  const index = (status: RunStatus) => `${prefix}:index:${status}`;
  return {
    prefix,
    run(runId) {
      const base = `${prefix}:{${hashTag(runId)}}`;
      return {
        run: `${base}:run`,
        journal: `${base}:journal`,
        lease: `${base}:lease`,
        children: `${base}:children`,
      };
    },
    index,
    indexes: () => allStatuses.map(index),
    channel: `${prefix}:work`,
  };
}
