import { Buffer } from 'node:buffer';
import type { RunStatus } from '@cairn/sdk';
import type { Gate } from './client.js';
import { allStatuses, bucketCount, type KeySpace } from './keys.js';

interface Cursor {
  key: string;
  offset: number;
  buffered: { id: string; score: number }[];
  done: boolean;
}

/** Where a listing resumes: past run `id`, whose index entries are scored `score` (its hash's `order`). */
export interface IndexPosition {
  /** As the run hash keeps it (decimal microseconds), so Redis parses the same score it indexed. */
  score: string;
  id: string;
}

/** How `indexedIds` reads its sets. */
export interface IndexReadOptions {
  pageSize: number;
  /** How many entries the first read of each set takes: a caller that wants n runs needs at most n from one set. */
  firstPage?: number;
  /** Only entries after this one in index order. */
  after?: IndexPosition;
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
 * Orders two run ids as a sorted set orders members of equal score: by their UTF-8 bytes. JavaScript's `<` compares
 * UTF-16 units, which disagrees past U+FFFF, and a merge or a page boundary ordered otherwise than each set would
 * skip or repeat runs.
 */
export function compareIds(a: string, b: string): number {
  return a === b ? 0 : Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** True when entry `entry` comes after `position` in index order (by score, ties by id). */
function isAfter(
  entry: { id: string; score: number },
  position: IndexPosition | undefined,
): boolean {
  if (position === undefined) return true;
  const score = Number(position.score);
  return entry.score > score || (entry.score === score && compareIds(entry.id, position.id) > 0);
}

/**
 * Run ids from the sorted sets `indexKeys` (every bucket's index of each status wanted), oldest first (by
 * creation order, ties by id), read a page at a time from each set and merged; with `after`, only those after it,
 * each set read from that score on. Not a snapshot: runs created, moved or deleted meanwhile may be missed or seen
 * twice, so callers read each run's own record and skip repeats.
 */
export async function* indexedIds(
  gate: Gate,
  indexKeys: readonly string[],
  { pageSize, firstPage = pageSize, after }: IndexReadOptions,
): AsyncGenerator<string> {
  let cursors: Cursor[] = indexKeys.map((key) => ({ key, offset: 0, buffered: [], done: false }));
  const seen = new Set<string>();
  const readPage = (key: string, offset: number, count: number) =>
    gate.call('read a status index', (client) =>
      after === undefined
        ? client.zrange(key, offset, String(offset + count - 1), 'WITHSCORES')
        : client.zrangebyscore(key, after.score, '+inf', 'WITHSCORES', 'LIMIT', offset, count),
    );
  for (;;) {
    await Promise.all(
      cursors
        .filter((cursor) => cursor.buffered.length === 0 && !cursor.done)
        .map(async (cursor) => {
          // Entries of the resuming score up to `after` itself head a set: read, but not listed. A set is read on
          // until it has an entry to merge or ends, or the merge could pass over its next entry.
          while (cursor.buffered.length === 0 && !cursor.done) {
            const count = cursor.offset === 0 ? Math.max(1, firstPage) : pageSize;
            const page = scoredEntries(await readPage(cursor.key, cursor.offset, count));
            cursor.buffered.push(...page.filter((entry) => isAfter(entry, after)));
            cursor.offset += page.length;
            if (page.length < count) cursor.done = true;
          }
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
        (head.score === best.score && compareIds(head.id, best.id) < 0)
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
