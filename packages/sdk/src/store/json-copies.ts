import { jsonClone } from '../json.js';

/**
 * The JSON copy of `value` (what `jsonClone` gives), sharing the parts of `previousCopy`, the copy made of
 * `previous`: a part of `value` that is the very value `previous` held at the same place has the same copy. The
 * runtime never changes a value it handed to a checkpoint (see `SnapshotStore.save`), so a checkpoint copies
 * what is new in the state instead of the whole conversation. The copies are shared: they must never be changed
 * (whoever reads them gets a copy of its own).
 */
export function jsonCopyBeside<T>(value: T, previous: unknown, previousCopy: unknown): T {
  return copyBeside(value, previous, previousCopy, []) as T;
}

function copyBeside(
  value: unknown,
  previous: unknown,
  previousCopy: unknown,
  ancestors: object[],
): unknown {
  if (typeof value !== 'object' || value === null) return primitiveCopy(value);
  if (value === previous) return previousCopy;
  // A Date, or a class that says what its JSON is: copied by that JSON.
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return jsonClone(value);
  if (ancestors.includes(value)) throw new TypeError('Converting circular structure to JSON');
  ancestors.push(value);
  let copy: unknown;
  if (Array.isArray(value)) {
    const [before, beforeCopy] =
      Array.isArray(previous) && Array.isArray(previousCopy) ? [previous, previousCopy] : [[], []];
    const array: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i += 1) {
      const item: unknown = value[i];
      // The same element as before (a conversation's earlier messages): its copy, without a call.
      if (item === before[i] && typeof item === 'object' && item !== null) {
        array[i] = beforeCopy[i];
        continue;
      }
      // What JSON drops becomes null in an array.
      const part = copyBeside(item, before[i], beforeCopy[i], ancestors);
      array[i] = part === undefined ? null : part;
    }
    copy = array;
  } else {
    const [before, beforeCopy] =
      isObject(previous) && isObject(previousCopy) ? [previous, previousCopy] : [{}, {}];
    const object: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      const child = (value as Record<string, unknown>)[key];
      const part =
        typeof child === 'string' || typeof child === 'boolean'
          ? child
          : child === before[key] && typeof child === 'object' && child !== null
            ? beforeCopy[key]
            : copyBeside(child, before[key], beforeCopy[key], ancestors);
      if (part === undefined) continue;
      // Defined, not assigned: a `__proto__` key (JSON.parse makes it an own key) stays a key.
      if (key === '__proto__') {
        Object.defineProperty(object, key, {
          value: part,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      } else object[key] = part;
    }
    copy = object;
  }
  ancestors.pop();
  return copy;
}

/** What JSON makes of a value that is not an object: undefined for what it drops (a function, a symbol). */
function primitiveCopy(value: unknown): unknown {
  if (typeof value === 'bigint') throw new TypeError('Do not know how to serialize a BigInt');
  if (typeof value === 'number') return Number.isFinite(value) ? value + 0 : null;
  return typeof value === 'string' || typeof value === 'boolean' || value === null
    ? value
    : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
