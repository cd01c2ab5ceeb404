import type { JsonValue } from '@cairn/sdk';

/**
 * Large snapshots are mostly arrays that only grow: an agent's conversation, a planner's ledger. Each such
 * array is kept as rows of `snapshot_chunks` instead of inside the snapshot column, each row the elements one
 * checkpoint added, so a checkpoint writes the elements that are new since the last one, not the whole
 * conversation again, in one row: the bytes written per trip stay flat instead of growing with the run.
 */

/** Arrays shorter than this stay inside the snapshot. */
export const minSplitItems = 4;

/** A snapshot with its long arrays taken out: the rest, and each array by its path (a JSON array of keys). */
export interface SplitSnapshot {
  inline: JsonValue;
  arrays: Map<string, JsonValue[]>;
}

/**
 * The key under which the inline snapshot records the length of each array taken out, in the order of their
 * paths (sorted as JavaScript sorts strings), so a load can tell when rows are missing at the end (gaps it sees
 * anyway). A dozen bytes per checkpoint. Snapshots written before it have none.
 */
export const itemCountsKey = '$cairn:n';

/**
 * Takes every array of at least `minSplitItems` that sits under objects only out of the snapshot, and
 * records their lengths in it.
 */
export function splitSnapshot(snapshot: JsonValue): SplitSnapshot {
  const arrays = new Map<string, JsonValue[]>();
  const walk = (value: JsonValue, path: string[]): JsonValue => {
    if (Array.isArray(value)) {
      if (value.length >= minSplitItems && path.length > 0) {
        arrays.set(JSON.stringify(path), value);
        return [];
      }
      return value;
    }
    if (value === null || typeof value !== 'object') return value;
    const copy: Record<string, JsonValue> = {};
    for (const [key, child] of Object.entries(value)) copy[key] = walk(child, [...path, key]);
    return copy;
  };
  const inline = walk(snapshot, []);
  if (arrays.size === 0 || inline === null || typeof inline !== 'object' || Array.isArray(inline))
    return { inline, arrays };
  const counts = [...arrays.keys()].sort().map((path) => arrays.get(path)!.length);
  return { inline: { ...inline, [itemCountsKey]: counts }, arrays };
}

/**
 * The inline snapshot without its recorded lengths, and why the arrays loaded do not match them (rows
 * deleted or added behind the store's back), if they do not.
 */
export function checkItemCounts(
  inline: JsonValue,
  arrays: ReadonlyMap<string, LoadedArray>,
): { inline: JsonValue; problem?: string } {
  if (inline === null || typeof inline !== 'object' || Array.isArray(inline)) return { inline };
  const { [itemCountsKey]: counts, ...rest } = inline;
  if (counts === undefined) return { inline };
  const paths = [...arrays.keys()].sort();
  if (!Array.isArray(counts) || counts.length !== paths.length)
    return {
      inline: rest,
      problem: `it has rows of ${paths.length} arrays where a checkpoint wrote others`,
    };
  for (const [index, path] of paths.entries()) {
    const loaded = arrays.get(path)!.items.length;
    if (loaded !== counts[index])
      return {
        inline: rest,
        problem: `${path} holds ${loaded} elements where ${String(counts[index])} were written`,
      };
  }
  return { inline: rest };
}

/** Puts the arrays back at their paths. */
export function mergeSnapshot(
  inline: JsonValue,
  arrays: Readonly<Record<string, JsonValue[]>>,
): JsonValue {
  let merged = inline;
  for (const [pathText, items] of Object.entries(arrays)) {
    const path = JSON.parse(pathText) as string[];
    merged = setAt(merged, path, items);
  }
  return merged;
}

function setAt(target: JsonValue, path: readonly string[], value: JsonValue): JsonValue {
  const [key, ...rest] = path;
  if (key === undefined) return value;
  const object =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? target : {};
  return { ...object, [key]: setAt(object[key] ?? null, rest, value) };
}

/** Elements of one array written as one row: `items` are the elements from index `idx` on. */
export interface Chunk {
  path: string;
  idx: number;
  items: JsonValue[];
}

/** What one checkpoint writes to `snapshot_chunks`. */
export interface ItemsWrite {
  /** New rows: only the elements that are new when the stored arrays are known. */
  chunks: Chunk[];
  /** Rows to delete first: of `path`, every row starting after `after` (-1: all of them). */
  cuts: Array<{ path: string; after: number }>;
  /** Delete every row of the run first (what is stored is not known). */
  trim: boolean;
  /** The snapshot version the write assumes is stored, or null for a full write. */
  expectedVersion: number | null;
}

/**
 * What is stored of one array: each element's JSON text, and where each row starts. Rows hold the text as
 * it was written (a text column, not jsonb), and a run's state is read back from that text, so an unchanged
 * element gives the same text again.
 */
export interface StoredArray {
  texts: string[];
  starts: number[];
}

interface Known {
  version: number;
  arrays: Map<string, StoredArray>;
}

/**
 * What this store instance knows is stored for the runs it wrote or read, so a checkpoint can send only
 * new elements, as one row per array. A run written by someone else since is caught by its snapshot
 * version, and written in full.
 */
export class StoredItems {
  private readonly runs = new Map<string, Known>();

  constructor(private readonly capacity = 1_000) {}

  /**
   * The write for a checkpoint: a delta against what is known, or everything when nothing is. An array that
   * only grew gets one new row with its new elements; one changed in place (or shrunk) is written again from
   * the start of the row holding its first change.
   */
  plan(
    runId: string,
    split: SplitSnapshot,
    full = false,
  ): ItemsWrite & { stored: Map<string, StoredArray> } {
    const known = full ? undefined : this.runs.get(runId);
    const chunks: Chunk[] = [];
    const cuts: ItemsWrite['cuts'] = [];
    const stored = new Map<string, StoredArray>();
    for (const [path, items] of split.arrays) {
      const texts = items.map(textOf);
      const before = known?.arrays.get(path);
      if (before === undefined) {
        // Unknown (every row of the run is deleted first), or a path new to the run: one row of everything.
        chunks.push({ path, idx: 0, items });
        stored.set(path, { texts, starts: [0] });
        continue;
      }
      let from = 0;
      const common = Math.min(before.texts.length, texts.length);
      while (from < common && before.texts[from] === texts[from]) from += 1;
      if (from === before.texts.length) {
        // Only grew (or unchanged): the new elements in a row of their own.
        if (texts.length > from) chunks.push({ path, idx: from, items: items.slice(from) });
        const starts = texts.length > from ? [...before.starts, from] : before.starts;
        stored.set(path, { texts, starts });
        continue;
      }
      // Changed at `from`, or shrank to it: rewrite from the start of the row that holds it.
      const start = before.starts.filter((at) => at <= from).at(-1) ?? 0;
      const starts = before.starts.filter((at) => at < start);
      cuts.push({ path, after: start - 1 });
      if (texts.length > start) {
        chunks.push({ path, idx: start, items: items.slice(start) });
        starts.push(start);
      }
      stored.set(path, { texts, starts });
    }
    for (const path of known?.arrays.keys() ?? []) {
      if (!split.arrays.has(path)) cuts.push({ path, after: -1 });
    }
    return {
      chunks,
      cuts,
      trim: known === undefined,
      expectedVersion: known?.version ?? null,
      stored,
    };
  }

  remember(runId: string, version: number, arrays: Map<string, StoredArray>): void {
    this.runs.delete(runId);
    this.runs.set(runId, { version, arrays });
    if (this.runs.size > this.capacity) {
      const oldest = this.runs.keys().next().value;
      if (oldest !== undefined) this.runs.delete(oldest);
    }
  }

  /** Records what a load read: each array's elements and where its rows start. */
  rememberLoaded(runId: string, version: number, arrays: ReadonlyMap<string, LoadedArray>): void {
    const known = new Map<string, StoredArray>();
    for (const [path, { items, starts }] of arrays)
      known.set(path, { texts: items.map(textOf), starts });
    this.remember(runId, version, known);
  }

  forget(runId: string): void {
    this.runs.delete(runId);
  }
}

function textOf(item: JsonValue): string {
  return JSON.stringify(item);
}

/** One array as a load read it from its rows. */
export interface LoadedArray {
  items: JsonValue[];
  starts: number[];
}

/**
 * The arrays of a run from its rows, as `[path, idx, items]` in path and index order. Rows must follow one
 * another without gap or overlap; anything else means the rows were changed behind the store's back.
 */
export function arraysOfChunks(
  rows: ReadonlyArray<readonly [string, number, JsonValue[]]>,
): Map<string, LoadedArray> | string {
  const arrays = new Map<string, LoadedArray>();
  for (const [path, idx, items] of rows) {
    let array = arrays.get(path);
    if (array === undefined) arrays.set(path, (array = { items: [], starts: [] }));
    if (idx !== array.items.length || !Array.isArray(items) || items.length === 0) {
      return `the rows of ${path} do not follow one another (a row at ${idx} after ${array.items.length} elements)`;
    }
    array.starts.push(idx);
    for (const item of items) array.items.push(item);
  }
  return arrays;
}
