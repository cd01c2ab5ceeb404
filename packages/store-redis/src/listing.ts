import { CairnError, RunNotFoundError, type RunFilter, type RunRecord } from '@cairn/sdk';
import { toRecords } from './children.js';
import { readFields, type StoreContext } from './context.js';
import { indexedIds, statusIndexKeys, statusList, type IndexPosition } from './indexes.js';
import { hashFields, toRecord } from './record.js';

/**
 * Where a listing `after` run `runId` resumes: the run's creation order, which scores it in every status index.
 * `RunNotFoundError` when no run has this id (deleted since, or its keys expired).
 */
async function resumeAfter(ctx: StoreContext, runId: string): Promise<IndexPosition> {
  const fields = await readFields(ctx, runId, ['runId', 'order']);
  const id = fields.get('runId');
  const order = fields.get('order');
  if (id === undefined) throw new RunNotFoundError(runId);
  if (order === undefined) {
    throw new CairnError(
      'STORE_FAILED',
      `A Cairn run hash in Redis has no "order" field: the key was written by something else.`,
      { data: { field: 'order', runId } },
    );
  }
  return { score: order, id };
}

/**
 * `list`: the runs of the filter's statuses, oldest first (creation order, ties by id), from the merged bucket
 * indexes a page at a time, each read from its own hash and kept when it still matches (it may have moved since
 * its index entry was read). With `after`, the listing resumes past that run, so pages read one after another list
 * every run that stayed put exactly once.
 */
export async function listRuns(
  ctx: StoreContext,
  filter: RunFilter,
  pageSize: number,
): Promise<RunRecord[]> {
  const { gate, keys } = ctx;
  const statuses = statusList(filter.status);
  const limit = filter.limit ?? Number.POSITIVE_INFINITY;
  const after = filter.after === undefined ? undefined : await resumeAfter(ctx, filter.after);
  if (limit <= 0 || statuses.length === 0) return [];
  const keep = (record: RunRecord) =>
    statuses.includes(record.status) &&
    (filter.kind === undefined || record.kind === filter.kind) &&
    (filter.name === undefined || record.name === filter.name);
  const found: Map<string, string>[] = [];
  let batch: string[] = [];
  const flush = async () => {
    const hashes = await Promise.all(
      batch.map(async (id) =>
        hashFields(await gate.call('read a run', (client) => client.hgetall(keys.run(id).run))),
      ),
    );
    for (const fields of hashes) {
      if (fields.size === 0 || found.length >= limit) continue;
      if (keep(toRecord(fields, undefined, 'mark'))) found.push(fields);
    }
    batch = [];
  };
  const indexes = statusIndexKeys(keys, statuses);
  const firstPage = Math.min(pageSize, limit);
  for await (const id of indexedIds(gate, indexes, {
    pageSize,
    firstPage,
    ...(after === undefined ? {} : { after }),
  })) {
    batch.push(id);
    if (batch.length >= Math.min(pageSize, limit - found.length)) await flush();
    if (found.length >= limit) break;
  }
  await flush();
  return toRecords(ctx, found, 'mark');
}
