import type { JsonValue } from '../json.js';
import { PayloadUnreadableError } from './codec.js';
import type { PayloadSealer } from './sealer.js';

/**
 * A snapshot is stored encoded as its body (everything but its arrays) and each array's elements one by one:
 * a conversation grows by a message a trip, and a store that writes only new elements (store-pg) must still
 * be able to, so each element is its own payload, bound to its place (array and index). An element already
 * encoded at that place is not encoded again: its stored string is reused (see `ItemCache`), so an unchanged
 * element is the same string at the next checkpoint.
 */
export const sealedSnapshotMark = 'cairn:sealed';

/** A snapshot as stored encoded. */
interface SealedSnapshot {
  [sealedSnapshotMark]: 1;
  /** `create` wrote it, before the store gave the run its incarnation: it is bound to no incarnation. */
  created?: true;
  body: string;
  /** Each array under objects only, by its path (a JSON array of keys), as its encoded elements. */
  items: Record<string, string[]>;
}

/**
 * The encoded string of each element object last encoded or read at a place, by identity: the runtime replaces
 * an element of its state, never changes one in place (`Checkpoint.snapshot`), so the same object at the same
 * place is the same payload.
 */
class ItemCache {
  private readonly known = new WeakMap<object, { place: string; sealed: string }>();

  get(element: JsonValue, place: string): string | undefined {
    if (element === null || typeof element !== 'object') return undefined;
    const hit = this.known.get(element);
    return hit?.place === place ? hit.sealed : undefined;
  }

  set(element: JsonValue, place: string, sealed: string): void {
    if (element !== null && typeof element === 'object') this.known.set(element, { place, sealed });
  }
}

/** Encodes and decodes snapshots for one store. */
export class SnapshotSealer {
  private readonly cache = new ItemCache();

  constructor(private readonly sealer: PayloadSealer) {}

  /** The stored form of `snapshot` for the run at `incarnation` ('' at `create`). */
  async seal(snapshot: JsonValue, runId: string, incarnation: string): Promise<JsonValue> {
    const arrays: Array<[string, JsonValue[]]> = [];
    const walk = (value: JsonValue, path: string[]): JsonValue => {
      if (Array.isArray(value)) {
        if (value.length === 0 || path.length === 0) return value;
        arrays.push([JSON.stringify(path), value]);
        return [];
      }
      if (value === null || typeof value !== 'object') return value;
      const copy: Record<string, JsonValue> = {};
      for (const [key, child] of Object.entries(value)) copy[key] = walk(child, [...path, key]);
      return copy;
    };
    const body = walk(snapshot, []);
    const items: Record<string, string[]> = {};
    // The body records each array's length, so an element dropped from the items (a truncated
    // conversation) is caught: the body is authenticated, the items' keys and count are not.
    const lengths: Record<string, number> = {};
    for (const [path, elements] of arrays) {
      lengths[path] = elements.length;
      const sealed: string[] = [];
      for (let index = 0; index < elements.length; index += 1) {
        const element = elements[index]!;
        const position = `${path}#${index}`;
        const place = `${runId}\u0000${incarnation}\u0000${position}`;
        let text = this.cache.get(element, place);
        if (text === undefined) {
          text = await this.sealer.seal(
            element,
            this.sealer.context(runId, incarnation, 'snapshot-item', position),
          );
          this.cache.set(element, place, text);
        }
        sealed.push(text);
      }
      items[path] = sealed;
    }
    const context = this.sealer.context(runId, incarnation, 'snapshot');
    return {
      [sealedSnapshotMark]: 1,
      ...(incarnation === '' ? { created: true as const } : {}),
      body: await this.sealer.seal({ snapshot: body, lengths }, context),
      items,
    } satisfies SealedSnapshot;
  }

  /** The snapshot a stored form holds, for the run at `incarnation`; `PayloadUnreadableError` otherwise. */
  async open(stored: JsonValue, runId: string, incarnation: string): Promise<JsonValue> {
    const outer = this.sealer.context(runId, incarnation, 'snapshot');
    if (stored === null || typeof stored !== 'object' || Array.isArray(stored)) {
      throw new PayloadUnreadableError(outer, 'not-encoded', 'it is not an encoded snapshot');
    }
    if (stored[sealedSnapshotMark] !== 1) {
      throw new PayloadUnreadableError(
        outer,
        'not-encoded',
        'it is stored in plaintext where a codec is set (written without the codec, or replaced)',
      );
    }
    const bound = stored.created === true ? '' : incarnation;
    const items = stored.items;
    if (items === null || typeof items !== 'object' || Array.isArray(items)) {
      throw new PayloadUnreadableError(outer, 'malformed', 'its items are not an object');
    }
    const opened = await this.sealer.open(
      stored.body,
      this.sealer.context(runId, bound, 'snapshot'),
    );
    const { snapshot: body, lengths } = (opened ?? {}) as {
      snapshot?: JsonValue;
      lengths?: unknown;
    };
    if (body === undefined || lengths === null || typeof lengths !== 'object') {
      throw new PayloadUnreadableError(
        outer,
        'malformed',
        'its body is not a sealed snapshot body',
      );
    }
    const expected = lengths as Record<string, unknown>;
    const paths = Object.keys(items);
    if (
      paths.length !== Object.keys(expected).length ||
      paths.some((path) => expected[path] !== (items[path] as unknown[] | undefined)?.length)
    ) {
      throw new PayloadUnreadableError(
        outer,
        'rejected',
        'its items are not the ones its body names (elements dropped or added)',
      );
    }
    for (const [path, sealed] of Object.entries(items)) {
      const keys = parsePath(path);
      if (keys === undefined || !Array.isArray(sealed)) {
        throw new PayloadUnreadableError(outer, 'malformed', `its items at ${path} are malformed`);
      }
      const elements: JsonValue[] = [];
      for (let index = 0; index < sealed.length; index += 1) {
        const position = `${path}#${index}`;
        const text = sealed[index];
        const element = await this.sealer.open(
          text,
          this.sealer.context(runId, bound, 'snapshot-item', position),
        );
        this.cache.set(element, `${runId}\u0000${bound}\u0000${position}`, text as string);
        elements.push(element);
      }
      if (!placeAt(body, keys, elements)) {
        throw new PayloadUnreadableError(outer, 'malformed', `its body has no array at ${path}`);
      }
    }
    return body;
  }
}

function parsePath(path: string): string[] | undefined {
  try {
    const keys: unknown = JSON.parse(path);
    return Array.isArray(keys) && keys.length > 0 && keys.every((key) => typeof key === 'string')
      ? (keys as string[])
      : undefined;
  } catch {
    return undefined;
  }
}

/** Puts `elements` in place of the empty array at `keys` under objects; false when there is none. */
function placeAt(body: JsonValue, keys: readonly string[], elements: JsonValue[]): boolean {
  let parent = body;
  for (const key of keys.slice(0, -1)) {
    if (parent === null || typeof parent !== 'object' || Array.isArray(parent)) return false;
    if (!Object.hasOwn(parent, key)) return false;
    parent = parent[key]!;
  }
  const last = keys.at(-1)!;
  if (parent === null || typeof parent !== 'object' || Array.isArray(parent)) return false;
  const slot = parent[last];
  if (!Array.isArray(slot) || slot.length !== 0) return false;
  parent[last] = elements;
  return true;
}
