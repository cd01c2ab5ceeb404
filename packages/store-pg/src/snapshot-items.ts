import type { JsonValue } from '@cairn/sdk';
import { itemCountsKey, pointerOf, type LoadedArray } from './snapshot-rows.js';

/**
 * Large snapshots are mostly arrays that only grow: an agent's conversation, a planner's ledger. Each such
 * array is kept as rows of `snapshot_chunks` instead of inside the snapshot column, each row the elements one
 * checkpoint added, so a checkpoint writes the elements that are new since the last one, not the whole
 * conversation again, in one row: the bytes written per trip stay flat instead of growing with the run.
 */

/** Arrays shorter than this stay inside the snapshot, unless they are long strings (see `minSplitText`). */
export const minSplitItems = 4;
/**
 * An array of strings this long in all is taken out whatever its length: a snapshot encoded by a payload codec
 * holds its conversation as a few long strings (one a checkpoint), which must not be written again with the
 * rest of the snapshot at every checkpoint until there are four of them.
 */
export const minSplitText = 1_024;

const isLongText = (items: readonly JsonValue[]): boolean => {
  let length = 0;
  for (const item of items) {
    if (typeof item !== 'string') return false;
    length += item.length;
  }
  return length >= minSplitText;
};

/** A snapshot with its long arrays taken out: the rest, and each array by its path (a JSON array of keys). */
export interface SplitSnapshot {
  inline: JsonValue;
  arrays: Map<string, JsonValue[]>;
}

/**
 * Takes every array of at least `minSplitItems` (or of long strings) that sits under objects only out of the snapshot, leaving an
 * empty array in its place, and records in it each array taken out, by its path, with its length (see
 * `itemCountsKey`).
 */
export function splitSnapshot(snapshot: JsonValue): SplitSnapshot {
  const arrays = new Map<string, JsonValue[]>();
  const walk = (value: JsonValue, path: string[]): JsonValue => {
    if (Array.isArray(value)) {
      if (path.length > 0 && (value.length >= minSplitItems || isLongText(value))) {
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
  const counts: Record<string, JsonValue> = {};
  for (const [path, items] of arrays)
    counts[pointerOf(JSON.parse(path) as string[])] = items.length;
  return { inline: { ...inline, [itemCountsKey]: counts }, arrays };
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
 * What is stored of one array: its elements as the checkpoint that wrote them held them, and where each row
 * starts. Rows hold each element's JSON text as it was written (a text column, not jsonb), and a run's state is
 * read back from that text, so an unchanged element gives the same text again. An element is compared with
 * the stored one by identity first: the runtime replaces an element of its state, never changes one in place
 * (see `Checkpoint.snapshot`), so the same object is the same text, and a checkpoint serializes only what is
 * new instead of the whole conversation. Elements read by a load, or copied since, are compared by their text.
 */
export interface StoredArray {
  items: readonly JsonValue[];
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
      const before = known?.arrays.get(path);
      if (before === undefined) {
        // Unknown (every row of the run is deleted first), or a path new to the run: one row of everything.
        chunks.push({ path, idx: 0, items });
        stored.set(path, { items: items.slice(), starts: [0] });
        continue;
      }
      let from = 0;
      const common = Math.min(before.items.length, items.length);
      while (from < common && sameElement(before.items[from]!, items[from]!)) from += 1;
      if (from === before.items.length) {
        // Only grew (or unchanged): the new elements in a row of their own.
        if (items.length > from) chunks.push({ path, idx: from, items: items.slice(from) });
        const starts = items.length > from ? [...before.starts, from] : before.starts;
        stored.set(path, { items: items.slice(), starts });
        continue;
      }
      // Changed at `from`, or shrank to it: rewrite from the start of the row that holds it.
      const start = before.starts.filter((at) => at <= from).at(-1) ?? 0;
      const starts = before.starts.filter((at) => at < start);
      cuts.push({ path, after: start - 1 });
      if (items.length > start) {
        chunks.push({ path, idx: start, items: items.slice(start) });
        starts.push(start);
      }
      stored.set(path, { items: items.slice(), starts });
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
    for (const [path, { items, starts }] of arrays) known.set(path, { items, starts });
    this.remember(runId, version, known);
  }

  forget(runId: string): void {
    this.runs.delete(runId);
  }
}

function sameElement(stored: JsonValue, item: JsonValue): boolean {
  return stored === item || JSON.stringify(stored) === JSON.stringify(item);
}
