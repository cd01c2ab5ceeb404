import type { RunStatus } from '@cairn/sdk';
import type { Gate } from './client.js';
import { allStatuses, bucketCount, type KeySpace } from './keys.js';

interface Cursor {
  key: string;
  offset: number;
  buffered: { id: string; score: number }[];
  done: boolean;
}

/** The status index keys of `statuses` in every bucket. */
export function statusIndexKeys(keys: KeySpace, statuses: readonly RunStatus[]): string[] {
  const unique = [...new Set(statuses)];
  return Array.from({ length: bucketCount }, (_, bucket) =>
    unique.map((status) => keys.index(bucket, status)),
  ).flat();
}

/** Flat [member, score, ...] over RESP2, [[member, score], ...] over RESP3: entries either way. */
export function scoredEntries(reply: unknown): { id: string; score: number }[] {
  const flat = (reply as unknown[]).flat();
  const entries: { id: string; score: number }[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2)
    entries.push({ id: String(flat[i]), score: Number(flat[i + 1]) });
  return entries;
}

/**
 * Run ids from the sorted sets `indexKeys` (every bucket's index of each status wanted), oldest first (by
 * creation order, ties by id), read a page at a time from each set and merged. The first page of each set is
 * `firstPage` long: a caller that wants n runs needs at most n from any one set. Not a snapshot: runs created,
 * moved or deleted meanwhile may be missed or seen twice, so callers read each run's own record and skip
 * repeats.
 */
export async function* indexedIds(
  gate: Gate,
  indexKeys: readonly string[],
  pageSize: number,
  firstPage = pageSize,
): AsyncGenerator<string> {
  let cursors: Cursor[] = indexKeys.map((key) => ({ key, offset: 0, buffered: [], done: false }));
  const seen = new Set<string>();
  for (;;) {
    await Promise.all(
      cursors
        .filter((cursor) => cursor.buffered.length === 0 && !cursor.done)
        .map(async (cursor) => {
          const count = cursor.offset === 0 ? Math.max(1, firstPage) : pageSize;
          const page = scoredEntries(
            await gate.call('read a status index', (client) =>
              client.zrange(
                cursor.key,
                cursor.offset,
                String(cursor.offset + count - 1),
                'WITHSCORES',
              ),
            ),
          );
          cursor.buffered.push(...page);
          cursor.offset += page.length;
          if (page.length < count) cursor.done = true;
        }),
    );
    // Sets read to their end drop out, so the merge below costs what is left, not every bucket and status.
    cursors = cursors.filter((cursor) => cursor.buffered.length > 0 || !cursor.done);
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
