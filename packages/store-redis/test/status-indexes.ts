import { claimableStatuses, terminalStatuses, type RunStatus } from '@cairn/sdk';
import type { RedisStore } from '@cairn/store-redis';
import type { Cluster } from 'ioredis';
// The one helper here that reaches into the key layout: where index entries are is what it checks.
import { bucketCount, keySpace } from '../src/keys.js';

/** Every status a run can be in, each with an index. */
export const everyStatus: readonly RunStatus[] = [
  ...claimableStatuses,
  'waiting',
  ...terminalStatuses,
];

/** The run ids each status lists, as the store's public `list({ status })` returns them. */
export async function listedByStatus(store: RedisStore): Promise<Map<RunStatus, string[]>> {
  const listed = new Map<RunStatus, string[]>();
  for (const status of everyStatus) {
    listed.set(
      status,
      (await store.list({ status })).map((run) => run.runId),
    );
  }
  return listed;
}

/**
 * The members of each status's index as Redis holds them, over every bucket, read past the store (which filters
 * its indexes by each run's own hash, so `list` never shows a stale entry). A run indexed twice, in two buckets or
 * two statuses, appears twice.
 */
export async function indexEntriesByStatus(
  client: Cluster,
  prefix: string,
): Promise<Map<RunStatus, string[]>> {
  const keys = keySpace(prefix);
  const entries = new Map<RunStatus, string[]>();
  for (const status of everyStatus) {
    const pages = await Promise.all(
      Array.from({ length: bucketCount }, (_, bucket) =>
        client.zrange(keys.index(bucket, status), '0', '-1'),
      ),
    );
    entries.set(status, pages.flat());
  }
  return entries;
}

/**
 * The runs that are not in exactly their status's index, each as `<runId> <status> indexed under [<statuses>]`
 * (a status named once per entry, so a duplicate shows twice; `gone` for an index entry of no run).
 */
export function misindexedRuns(
  byStatus: ReadonlyMap<RunStatus, readonly string[]>,
  statusOf: ReadonlyMap<string, RunStatus>,
): string[] {
  const indexedUnder = new Map<string, RunStatus[]>();
  for (const [status, ids] of byStatus) {
    for (const id of ids) indexedUnder.set(id, [...(indexedUnder.get(id) ?? []), status]);
  }
  const wrong: string[] = [];
  for (const runId of new Set([...statusOf.keys(), ...indexedUnder.keys()])) {
    const status = statusOf.get(runId);
    const under = indexedUnder.get(runId) ?? [];
    if (under.length !== 1 || under[0] !== status)
      wrong.push(`${runId} ${status ?? 'gone'} indexed under [${under.join(', ')}]`);
  }
  return wrong;
}
