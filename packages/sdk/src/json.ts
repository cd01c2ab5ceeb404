/** A value that survives `JSON.stringify` and `JSON.parse` unchanged: everything a snapshot may hold. */
export type JsonValue =
  string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/**
 * JSON as code writes it: a `JsonValue`, except that an object property may be `undefined`, which JSON drops.
 * What a model answers is typed with it, so a hand-written model's literals need no annotation: TypeScript
 * gives the second of `[{ to: 'a', body: 'b' }, { body: 'c' }]` the type `{ body: string; to?: undefined }`.
 */
export type JsonInput =
  string | number | boolean | null | JsonInput[] | { [key: string]: JsonInput | undefined };

/**
 * Copies a value through JSON, so what a store keeps can never alias what the runtime keeps mutating,
 * and a value that is not JSON fails here instead of in a store.
 */
export function jsonClone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

// A surrogate without its other half: what cutting a string between the halves of an emoji leaves.
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
// JSON.stringify escapes exactly these: NUL, and lone surrogates (paired ones it writes as they are).
const unstorableEscape = /\\u0000|\\ud[89a-f]/i;

/** A string every store can hold: lone surrogates and NUL become U+FFFD (the replacement character). */
export function storableString(text: string): string {
  return text.replace(loneSurrogate, '\ufffd').replaceAll('\u0000', '\ufffd');
}

/**
 * Copies a value through JSON, as `jsonClone` does, and makes every string in it (keys included)
 * storable: what a run writes is the same on every store, Postgres's JSONB (which refuses NUL and lone
 * surrogates) included. Values without such characters pay one regular expression test.
 */
export function storableJson<T>(value: T): T {
  const text = JSON.stringify(value);
  if (text === undefined) {
    if (value === undefined) return value;
    // A function or a symbol: JSON has nothing for it (inside an object it would vanish without a word).
    throw new TypeError(`A ${typeof value} is not JSON.`);
  }
  const parsed = JSON.parse(text) as unknown;
  return (unstorableEscape.test(text) ? makeStorable(parsed) : parsed) as T;
}

/**
 * The value itself when every string in it is storable as it is (the usual case), else a storable copy, as
 * `storableJson` makes. For a value handed to a store that serializes or copies it (every store does, before
 * its write settles) and that nothing changes afterwards: it saves `storableJson`'s parse. A value that is not
 * JSON fails here too.
 */
export function storableView<T>(value: T): T {
  return isStorableText(value) ? value : storableCopy(value);
}

/**
 * `storableView` for one run's checkpoints, one after another. A part of the state that is the very value the
 * last checkpoint held was found storable then and is not looked at again (the runtime replaces a part of its
 * state, never changes one in place); what is new is checked by its JSON. A checkpoint costs what is new in the
 * state, not the whole conversation again.
 */
export class StorableViews {
  private last: unknown;

  view<T>(value: T): T {
    if (isStorableBeside(value, this.last)) {
      this.last = value;
      return value;
    }
    this.last = undefined;
    return storableCopy(value);
  }
}

// A NUL or a surrogate: a string without one (nearly every string) needs no closer look.
const suspectCharacter = /[\u0000\ud800-\udfff]/;
// A NUL, or a surrogate without its other half, in a string as it is (not as JSON escapes it).
const unstorableCharacter =
  /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function isStorableString(text: string): boolean {
  return !suspectCharacter.test(text) || !unstorableCharacter.test(text);
}

function isStorableText(value: unknown): boolean {
  const text = JSON.stringify(value);
  return text === undefined || !unstorableEscape.test(text);
}

function storableCopy<T>(value: T): T {
  return makeStorable(JSON.parse(JSON.stringify(value)) as unknown) as T;
}

/**
 * Whether `value` is storable, given that `previous` was: the parts that are the same values as `previous`'s at
 * the same place are, and so are the keys and elements of a container that is where `previous` has one of its
 * kind; any other part is checked by its JSON (which throws on what JSON cannot write).
 */
function isStorableBeside(value: unknown, previous: unknown): boolean {
  if (value === previous) return true;
  if (typeof value === 'string') return isStorableString(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return true;
  if (Array.isArray(value) && Array.isArray(previous)) {
    for (let i = 0; i < value.length; i += 1)
      if (!isStorableBeside(value[i], previous[i])) return false;
    return true;
  }
  if (isPlainObject(value) && isPlainObject(previous)) {
    for (const key of Object.keys(value)) {
      if (!isStorableString(key) || !isStorableBeside(value[key], previous[key])) return false;
    }
    return true;
  }
  return isStorableText(value);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    typeof (value as { toJSON?: unknown }).toJSON !== 'function'
  );
}

function makeStorable(value: unknown): unknown {
  if (typeof value === 'string') return storableString(value);
  if (Array.isArray(value)) return value.map(makeStorable);
  if (value !== null && typeof value === 'object') {
    // Defined, not assigned: a `__proto__` key (JSON.parse makes it an own key) stays a key.
    return Object.fromEntries(
      Object.entries(value).map(([key, child]) => [storableString(key), makeStorable(child)]),
    );
  }
  return value;
}

/** Serializes with object keys sorted, so structurally equal values give equal strings. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}
