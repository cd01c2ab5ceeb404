import { canonicalJsonOf } from './canonical-json.js';
import type { JsonValue } from '@cairn/sdk';

/**
 * Large snapshots are mostly arrays that only grow: an agent's conversation, a planner's ledger. Each such
 * array is kept as rows of `snapshot_items` (one per element) instead of inside the snapshot column, so a
 * checkpoint writes the elements that are new since the last one, not the whole conversation again: the
 * bytes written per trip stay flat instead of growing with the run.
 */

/** Arrays shorter than this stay inside the snapshot. */
export const minSplitItems = 4;

/** A snapshot with its long arrays taken out: the rest, and each array by its path (a JSON array of keys). */
export interface SplitSnapshot {
  inline: JsonValue;
  arrays: Map<string, JsonValue[]>;
}

/** Takes every array of at least `minSplitItems` that sits under objects only out of the snapshot. */
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
  return { inline: walk(snapshot, []), arrays };
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

/** What one checkpoint writes to `snapshot_items`. */
export interface ItemsWrite {
  /** Elements to insert or overwrite: only the new ones when the stored arrays are known. */
  upserts: Array<{ path: string; idx: number; item: JsonValue }>;
  /** Every array's length; stored rows past it, or of a path no longer split, are deleted. */
  lengths: Record<string, number>;
  /** The snapshot version the upserts assume is stored, or null for a full write. */
  expectedVersion: number | null;
  /**
   * Stored rows may lie past the new lengths (an array shrank or went, or what is stored is not known): only
   * then does the write look for rows to delete, so a growing conversation costs no scan of its items.
   */
  trim: boolean;
}

interface Known {
  version: number;
  /** Canonical JSON of each stored element, per path: what a new checkpoint is compared with. */
  arrays: Map<string, string[]>;
}

/**
 * What this store instance knows is stored for the runs it wrote or read, so a checkpoint can send only
 * new elements. A run written by someone else since is caught by its snapshot version, and written in full.
 */
export class StoredItems {
  private readonly runs = new Map<string, Known>();

  constructor(private readonly capacity = 1_000) {}

  /** The write for a checkpoint: a delta against what is known, or everything when nothing is. */
  plan(
    runId: string,
    split: SplitSnapshot,
    full = false,
  ): ItemsWrite & { canonical: Map<string, string[]> } {
    const known = full ? undefined : this.runs.get(runId);
    let trim = known === undefined;
    for (const [path, texts] of known?.arrays ?? []) {
      if ((split.arrays.get(path)?.length ?? 0) < texts.length) trim = true;
    }
    const upserts: ItemsWrite['upserts'] = [];
    const lengths: Record<string, number> = {};
    const canonical = new Map<string, string[]>();
    for (const [path, items] of split.arrays) {
      const texts = items.map(canonicalJsonOf);
      canonical.set(path, texts);
      lengths[path] = items.length;
      const before = known?.arrays.get(path);
      let from = 0;
      if (before !== undefined && before.length <= texts.length) {
        while (from < before.length && before[from] === texts[from]) from += 1;
      }
      // An element changed in place: rewrite from there on.
      for (let idx = from; idx < items.length; idx += 1)
        upserts.push({ path, idx, item: items[idx]! });
    }
    return { upserts, lengths, expectedVersion: known?.version ?? null, trim, canonical };
  }

  remember(runId: string, version: number, canonical: Map<string, string[]>): void {
    this.runs.delete(runId);
    this.runs.set(runId, { version, arrays: canonical });
    if (this.runs.size > this.capacity) {
      const oldest = this.runs.keys().next().value;
      if (oldest !== undefined) this.runs.delete(oldest);
    }
  }

  /** Records what a load read. */
  rememberLoaded(
    runId: string,
    version: number,
    arrays: Readonly<Record<string, JsonValue[]>>,
  ): void {
    const canonical = new Map<string, string[]>();
    for (const [path, items] of Object.entries(arrays))
      canonical.set(path, items.map(canonicalJsonOf));
    this.remember(runId, version, canonical);
  }

  forget(runId: string): void {
    this.runs.delete(runId);
  }
}
