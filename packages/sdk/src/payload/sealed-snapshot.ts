import { canonicalJson, type JsonValue } from '../json.js';
import { PayloadUnreadableError, type PayloadContext } from './codec.js';
import { sealedHeader, type PayloadSealer } from './sealer.js';

/**
 * A snapshot is stored encoded as its body (everything but its arrays) and its arrays' elements in groups: a
 * conversation grows by a few messages a trip, and a store that writes only new elements (store-pg) must still
 * be able to, so the elements a checkpoint added are one payload of their own, bound to their place (the array
 * and the index the group starts at). A group already encoded at that place, of the same element objects, is not
 * encoded again: its stored string is reused (see `GroupCache`), so what did not change is the same string at
 * the next checkpoint. One payload per group, not per element: each payload costs a header, an IV and a tag.
 */
export const sealedSnapshotMark = 'cairn:sealed';

/** A snapshot as stored encoded. */
interface SealedSnapshot {
  [sealedSnapshotMark]: 1;
  /** `create` wrote it, before the store gave the run its incarnation: it is bound to no incarnation. */
  created?: true;
  /** Whose data the run holds (`NewRun.subject`), in plaintext: how `forget` finds the run. */
  subject?: string;
  body: string;
  /** Each array under objects only, by its path (a JSON array of keys), as its encoded groups of elements. */
  items: Record<string, string[]>;
}

interface Group {
  place: string;
  members: readonly JsonValue[];
  sealed: string;
}

/**
 * The encoded group each element object starts, as last encoded or read, by identity: the runtime replaces an
 * element of its state, never changes one in place (`Checkpoint.snapshot`), so the same objects at the same
 * place are the same payload.
 */
class GroupCache {
  private readonly known = new WeakMap<object, Group>();

  /** The group starting at `elements[at]`, if it was encoded at `place` with the elements that follow it now. */
  at(elements: readonly JsonValue[], at: number, place: string): Group | undefined {
    const first = elements[at];
    if (first === null || typeof first !== 'object') return undefined;
    const hit = this.known.get(first!);
    if (hit === undefined || hit.place !== place || at + hit.members.length > elements.length)
      return undefined;
    return hit.members.every((member, i) => elements[at + i] === member) ? hit : undefined;
  }

  set(group: Group): void {
    const first = group.members[0];
    if (first !== null && typeof first === 'object') this.known.set(first!, group);
  }
}

/** The longest one-element array (as JSON) kept in a snapshot's body. */
const smallArrayChars = 512;

const placeOf = (runId: string, incarnation: string, position: string) =>
  `${runId}\u0000${incarnation}\u0000${position}`;

/**
 * The groups a load read, by place, with their elements' text: a run resumed from them holds equal elements but
 * not the same objects (its state was parsed again), and must still write the stored groups back as they are,
 * not encode its whole conversation again. Kept for the runs read most recently.
 */
class OpenedGroups {
  private readonly runs = new Map<
    string,
    Map<string, { sealed: string; text: string; count: number }>
  >();

  constructor(private readonly capacity = 1_000) {}

  remember(run: string, position: string, sealed: string, members: readonly JsonValue[]): void {
    let groups = this.runs.get(run);
    if (groups === undefined) {
      groups = new Map();
      this.runs.set(run, groups);
      if (this.runs.size > this.capacity) this.runs.delete(this.runs.keys().next().value!);
    }
    groups.set(position, { sealed, text: canonicalJson(members), count: members.length });
  }

  /** The stored group at `position` when the elements from `at` are equal to what it holds. */
  at(run: string, position: string, elements: readonly JsonValue[], at: number): Group | undefined {
    const group = this.runs.get(run)?.get(position);
    if (group === undefined || at + group.count > elements.length) return undefined;
    const members = elements.slice(at, at + group.count);
    if (canonicalJson(members) !== group.text) return undefined;
    return { place: '', members, sealed: group.sealed };
  }
}

/** Encodes and decodes snapshots for one store. */
export class SnapshotSealer {
  private readonly cache = new GroupCache();
  private readonly opened = new OpenedGroups();

  constructor(private readonly sealer: PayloadSealer) {}

  /** The stored form of `snapshot` for the run at `incarnation` ('' at `create`), of `subject` if it has one. */
  async seal(
    snapshot: JsonValue,
    runId: string,
    incarnation: string,
    subject?: string,
  ): Promise<JsonValue> {
    const arrays: Array<[string, JsonValue[]]> = [];
    const walk = (value: JsonValue, path: string[]): JsonValue => {
      if (Array.isArray(value)) {
        if (value.length === 0 || path.length === 0) return value;
        const key = JSON.stringify(path);
        if (this.staysInBody(value, runId, incarnation, key)) return value;
        arrays.push([key, value]);
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
    for (const [path, elements] of arrays) lengths[path] = elements.length;
    const context = this.sealer.context(runId, incarnation, 'snapshot');
    const sealedBody = await this.sealer.seal({ snapshot: body, lengths }, context);
    // The body is encoded afresh, so its header is how this process encodes now (codecs and keys): a group read
    // from the store under another (a key since rotated) is encoded again, never written back as it was.
    const current = sealedHeader(sealedBody);
    for (const [path, elements] of arrays) {
      items[path] = await this.sealGroups(elements, path, runId, incarnation, current);
    }
    return {
      [sealedSnapshotMark]: 1,
      ...(incarnation === '' ? { created: true as const } : {}),
      ...(subject === undefined ? {} : { subject }),
      body: sealedBody,
      items,
    } satisfies SealedSnapshot;
  }

  /**
   * A one-element array that is small and not already a group stays in the body: a payload of its own would cost
   * a header, an IV and a tag, and a cipher, at every checkpoint that writes it (a trip's pending calls, a
   * conversation's first message). An array that grows becomes groups at its second element.
   */
  private staysInBody(
    elements: readonly JsonValue[],
    runId: string,
    incarnation: string,
    path: string,
  ): boolean {
    if (elements.length !== 1) return false;
    if (this.cache.at(elements, 0, placeOf(runId, incarnation, `${path}#0`)) !== undefined)
      return false;
    return JSON.stringify(elements).length <= smallArrayChars;
  }

  /**
   * An array as groups: the ones encoded before (with `header`, as this process encodes) where they still hold,
   * the elements between them as new ones.
   */
  private async sealGroups(
    elements: readonly JsonValue[],
    path: string,
    runId: string,
    incarnation: string,
    header: string,
  ): Promise<string[]> {
    const groups: string[] = [];
    const run = `${runId}\u0000${incarnation}`;
    const known = (at: number) => {
      const place = placeOf(runId, incarnation, `${path}#${at}`);
      const hit = this.cache.at(elements, at, place);
      if (hit !== undefined && sealedHeader(hit.sealed) === header) return hit;
      const read = this.opened.at(run, `${path}#${at}`, elements, at);
      if (read === undefined || sealedHeader(read.sealed) !== header) return undefined;
      // Equal to what was read: the stored group again, known by these objects from now on.
      const group = { ...read, place };
      this.cache.set(group);
      return group;
    };
    let at = 0;
    while (at < elements.length) {
      const hit = known(at);
      if (hit !== undefined) {
        groups.push(hit.sealed);
        at += hit.members.length;
        continue;
      }
      let end = at + 1;
      while (end < elements.length && known(end) === undefined) end += 1;
      const members = elements.slice(at, end);
      const position = `${path}#${at}`;
      const sealed = await this.sealer.seal(
        members,
        this.sealer.context(runId, incarnation, 'snapshot-item', position),
      );
      this.cache.set({ place: placeOf(runId, incarnation, position), members, sealed });
      groups.push(sealed);
      at = end;
    }
    return groups;
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
    if (Object.keys(items).length !== Object.keys(expected).length) throw notItsItems(outer);
    for (const [path, groups] of Object.entries(items)) {
      const keys = parsePath(path);
      if (keys === undefined || !Array.isArray(groups)) {
        throw new PayloadUnreadableError(outer, 'malformed', `its items at ${path} are malformed`);
      }
      const elements: JsonValue[] = [];
      for (const sealed of groups) {
        const position = `${path}#${elements.length}`;
        const members = await this.sealer.open(
          sealed,
          this.sealer.context(runId, bound, 'snapshot-item', position),
        );
        if (!Array.isArray(members) || members.length === 0) {
          throw new PayloadUnreadableError(outer, 'malformed', `a group at ${position} is not one`);
        }
        this.cache.set({
          place: placeOf(runId, bound, position),
          members,
          sealed: sealed as string,
        });
        this.opened.remember(`${runId}\u0000${bound}`, position, sealed as string, members);
        elements.push(...members);
      }
      if (expected[path] !== elements.length) throw notItsItems(outer);
      if (!placeAt(body, keys, elements)) {
        throw new PayloadUnreadableError(outer, 'malformed', `its body has no array at ${path}`);
      }
    }
    return body;
  }
}

/** The subject a stored snapshot names in plaintext (see `SealedSnapshot.subject`), or undefined. */
export function storedSubject(stored: JsonValue | null): string | undefined {
  if (stored === null || typeof stored !== 'object' || Array.isArray(stored)) return undefined;
  return typeof stored.subject === 'string' ? stored.subject : undefined;
}

const notItsItems = (context: PayloadContext) =>
  new PayloadUnreadableError(
    context,
    'rejected',
    'its items are not the ones its body names (elements dropped or added)',
  );

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
