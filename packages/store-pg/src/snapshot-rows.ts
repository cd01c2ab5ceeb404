import { advisorySnapshotKeys, type JsonValue } from '@cairn/sdk';

/**
 * Reading a snapshot back from its rows (see `snapshot-items.ts` for how a checkpoint splits it): each chunk row
 * is parsed on its own, each array is checked against what the checkpoint recorded of it (its path and its
 * length) and against the placeholder it left in the inline snapshot, so rows changed behind the store's back are
 * caught, never merged somewhere else. A part of the snapshot that is only read (the run's history, see the
 * sdk's `advisorySnapshotKeys`) is dropped (set to null) when its rows cannot be trusted, instead of refusing the
 * run: history is never a reason to refuse one.
 */

/**
 * The key under which the inline snapshot records the arrays taken out of it: an object from each one's JSON
 * Pointer to its length, so a load can tell rows missing, added, or moved to another path. Checkpoints before
 * issue 31 recorded only the lengths, in the order of the sorted paths; snapshots older still, none.
 */
export const itemCountsKey = '$cairn:n';

/** One array as a load read it from its rows. */
export interface LoadedArray {
  items: JsonValue[];
  starts: number[];
}

/** A chunk row as `snapshot_items` selects it: its path's text, its index, its items' text. */
export type ChunkRow = readonly [path: string, idx: number, items: string];

/** What the rows of a run hold: its arrays by path, those dropped (their rows unreadable), or why it is invalid. */
export interface ReadArrays {
  arrays: Map<string, LoadedArray>;
  /** Paths of advisory arrays whose rows could not be read or did not follow one another. */
  dropped: Set<string>;
}

/** The JSON Pointer (RFC 6901) of a path: how a checkpoint records the arrays it took out. */
export function pointerOf(path: readonly string[]): string {
  return path.map((key) => `/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

function isAdvisory(path: readonly string[]): boolean {
  return path.length > 1 && advisorySnapshotKeys.includes(path[0]!);
}

function parsePath(text: string): string[] | undefined {
  try {
    const path = JSON.parse(text) as unknown;
    return Array.isArray(path) && path.every((key) => typeof key === 'string') ? path : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The arrays of a run from its rows, in path and index order, each row parsed on its own. Rows must follow one
 * another without gap or overlap. An unreadable row of an advisory array drops that array; of any other, the
 * run is invalid (the string says why).
 */
export function arraysOfRows(rows: readonly ChunkRow[]): ReadArrays | string {
  const arrays = new Map<string, LoadedArray>();
  const dropped = new Set<string>();
  for (const [pathText, idx, itemsText] of rows) {
    const path = parsePath(pathText);
    if (path === undefined)
      return `a row of its long arrays names a path that is not one (${pathText})`;
    if (dropped.has(pathText)) continue;
    let items: unknown;
    try {
      items = JSON.parse(itemsText);
    } catch {
      items = undefined;
    }
    let array = arrays.get(pathText);
    if (array === undefined) arrays.set(pathText, (array = { items: [], starts: [] }));
    const problem = !Array.isArray(items)
      ? `a row of ${pathText} is not JSON`
      : idx !== array.items.length || items.length === 0
        ? `the rows of ${pathText} do not follow one another (a row at ${idx} after ${array.items.length} elements)`
        : undefined;
    if (problem !== undefined) {
      if (!isAdvisory(path)) return problem;
      dropped.add(pathText);
      arrays.delete(pathText);
      continue;
    }
    array.starts.push(idx);
    for (const item of items as JsonValue[]) array.items.push(item);
  }
  return { arrays, dropped };
}

/**
 * The inline snapshot without its recorded lengths, the arrays to put back, and why the rows do not match what
 * the checkpoint recorded, if they do not. Recorded as an object (pointer to length, checkpoints since issue 31):
 * every array recorded must have been loaded, with that length, and land on the empty array its checkpoint left
 * at its path; and no other array may have been loaded. Recorded as a list (earlier checkpoints): the lengths, in
 * the order of the sorted paths. An advisory array that fails is dropped instead.
 */
export function checkItemCounts(
  inline: JsonValue,
  read: ReadArrays,
): { inline: JsonValue; arrays: Map<string, LoadedArray>; dropped: Set<string>; problem?: string } {
  const arrays = new Map(read.arrays);
  const dropped = new Set(read.dropped);
  if (inline === null || typeof inline !== 'object' || Array.isArray(inline))
    return { inline, arrays, dropped };
  const { [itemCountsKey]: counts, ...rest } = inline;
  const fail = (path: string, problem: string) => {
    arrays.delete(path);
    if (isAdvisory(parsePath(path) ?? [])) {
      dropped.add(path);
      return undefined;
    }
    return problem;
  };
  const done = (problem: string | undefined) =>
    problem === undefined
      ? { inline: rest, arrays, dropped }
      : { inline: rest, arrays, dropped, problem };
  if (counts === undefined) return { inline, arrays, dropped };
  if (Array.isArray(counts)) {
    const paths = [...read.arrays.keys(), ...read.dropped].sort();
    if (counts.length !== paths.length)
      return done(
        `it has rows of ${paths.length} arrays where a checkpoint wrote ${counts.length}`,
      );
    for (const [index, path] of paths.entries()) {
      const loaded = arrays.get(path)?.items.length;
      if (loaded !== undefined && loaded !== counts[index]) {
        const problem = fail(
          path,
          `${path} holds ${loaded} elements where ${String(counts[index])} were written`,
        );
        if (problem !== undefined) return done(problem);
      }
    }
    return done(undefined);
  }
  if (counts === null || typeof counts !== 'object')
    return done('its recorded array lengths are malformed');
  const recorded = new Map(Object.entries(counts));
  for (const [path, array] of [...arrays]) {
    const keys = parsePath(path)!;
    const count = recorded.get(pointerOf(keys));
    recorded.delete(pointerOf(keys));
    const problem =
      count === undefined
        ? `it has rows of ${path}, which its checkpoint did not take out`
        : array.items.length !== count
          ? `${path} holds ${array.items.length} elements where ${String(count)} were written`
          : !isEmptyArrayAt(rest, keys)
            ? `the rows of ${path} have no place left for them in its snapshot`
            : undefined;
    if (problem !== undefined && fail(path, problem) !== undefined) return done(problem);
  }
  for (const pointer of recorded.keys()) {
    const keys = keysOf(pointer);
    if (dropped.has(JSON.stringify(keys))) continue;
    if (isAdvisory(keys)) dropped.add(JSON.stringify(keys));
    else return done(`the rows of ${pointer} are gone`);
  }
  return done(undefined);
}

/** The keys of a JSON Pointer. */
function keysOf(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((key) => key.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function isEmptyArrayAt(value: JsonValue, path: readonly string[]): boolean {
  let at: JsonValue | undefined = value;
  for (const key of path) {
    if (at === null || typeof at !== 'object' || Array.isArray(at)) return false;
    at = at[key];
  }
  return Array.isArray(at) && at.length === 0;
}

/** Puts the arrays back at their paths, and null where an advisory array was dropped. */
export function mergeSnapshot(
  inline: JsonValue,
  arrays: ReadonlyMap<string, JsonValue[]>,
  dropped: ReadonlySet<string> = new Set(),
): JsonValue {
  let merged = inline;
  for (const [pathText, items] of arrays)
    merged = setAt(merged, JSON.parse(pathText) as string[], items);
  for (const pathText of dropped) merged = setAt(merged, JSON.parse(pathText) as string[], null);
  return merged;
}

function setAt(target: JsonValue, path: readonly string[], value: JsonValue): JsonValue {
  const [key, ...rest] = path;
  if (key === undefined) return value;
  const object =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? target : {};
  return { ...object, [key]: setAt(object[key] ?? null, rest, value) };
}
