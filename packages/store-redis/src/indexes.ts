import type { RunStatus } from '@cairn/sdk';
import type { Gate } from './client.js';
import { allStatuses, type KeySpace } from './keys.js';

interface Cursor {
  key: string;
  offset: number;
  buffered: { id: string; score: number }[];
  done: boolean;
}

/**
 * Run ids from the indexes of `statuses`, oldest first (by creation order, ties by id), read a page at a
 * time from each sorted set and merged. Not a snapshot: runs created, moved or deleted meanwhile may be
 * missed or seen twice, so callers read each run's own record and skip repeats.
 */
export async function* indexedIds(
  gate: Gate,
  keys: KeySpace,
  statuses: readonly RunStatus[],
  pageSize: number,
): AsyncGenerator<string> {
  const cursors: Cursor[] = [...new Set(statuses)].map((status) => ({
    key: keys.index(status),
    offset: 0,
    buffered: [],
    done: false,
  }));
  const seen = new Set<string>();
  for (;;) {
    await Promise.all(
      cursors
        .filter((cursor) => cursor.buffered.length === 0 && !cursor.done)
        .map(async (cursor) => {
          // Flat [member, score, ...] over RESP2, [[member, score], ...] over RESP3: flatten either.
          const page = (
            (await gate.call('read a status index', (client) =>
              client.zrange(
                cursor.key,
                cursor.offset,
                String(cursor.offset + pageSize - 1),
                'WITHSCORES',
              ),
            )) as unknown[]
          ).flat();
          for (let i = 0; i + 1 < page.length; i += 2) {
            cursor.buffered.push({ id: String(page[i]), score: Number(page[i + 1]) });
          }
          cursor.offset += page.length / 2;
          if (page.length / 2 < pageSize) cursor.done = true;
        }),
    );
    let next: Cursor | undefined;
    for (const cursor of cursors) {
      const head = cursor.buffered[0];
      if (head === undefined) continue;
      const best = next?.buffered[0];
      if (
        best === undefined ||
        head.score < best.score ||
        (head.score === best.score && head.id < best.id)
      )
        next = cursor;
    }
    const entry = next?.buffered.shift();
    if (entry === undefined) return;
    if (seen.has(entry.id)) continue;
    seen.add(entry.id);
    yield entry.id;
  }
}

/** The statuses a filter names: all of them when it names none. */
export function statusList(
  status: RunStatus | readonly RunStatus[] | undefined,
): readonly RunStatus[] {
  if (status === undefined) return allStatuses;
  return typeof status === 'string' ? [status] : status;
}

/**
 * On Cluster the indexes live in other slots than the run, so after a script changed a run's status the
 * store moves its entry in a second step: add it to the index of its status and remove it from the others.
 * Idempotent, so the next status change of a run also repairs an entry a crash left behind.
 */
export async function moveInIndexes(
  gate: Gate,
  keys: KeySpace,
  runId: string,
  status: RunStatus | undefined,
  order: string,
): Promise<void> {
  await Promise.all(
    allStatuses.map((each) =>
      gate.call('update a status index', (client) =>
        each === status
          ? client.zadd(keys.index(each), order, runId)
          : client.zrem(keys.index(each), runId),
      ),
    ),
  );
}
