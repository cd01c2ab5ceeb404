// What a store offers so a run's stored payloads can be moved to a new codec key (`DurableStore.replacePayloads`).
import { CairnError } from '../errors.js';
import type { JsonValue } from '../json.js';

/** A signal payload a store keeps for a run (see `DurableStore.signalPayloads`). */
export interface KeptSignalPayload {
  /** The signal's name; a decision's is `cairn.approval`. */
  name: string;
  payload: JsonValue;
}

/** The shortest string `replacePayloads` replaces: a short common string is never replaced by mistake. */
export const minReplacedLength = 16;

// Printable ASCII but `"` and `\`: JSON text holds such a string as it is, so a store that keeps JSON as text
// may replace `"<from>"` by `"<to>"` in it and change exactly the string values equal to `from`.
const replaceable = /^[\x20-\x21\x23-\x5b\x5d-\x7e]+$/;

/**
 * Checks what `replacePayloads` is given: each key and value printable ASCII without `"` or `\`, and each key
 * starting with a letter or digit and at least `minReplacedLength` long. `INVALID_ARGUMENT` otherwise, naming the first bad one.
 */
export function checkReplacements(runId: string, replacements: ReadonlyMap<string, string>): void {
  for (const [from, to] of replacements) {
    for (const [which, text] of [
      ['replaced', from],
      ['replacing', to],
    ] as const) {
      if (typeof text !== 'string' || !replaceable.test(text)) {
        throw new CairnError(
          'INVALID_ARGUMENT',
          `A ${which} payload string must be printable ASCII without '"' or '\\' (run "${runId}").`,
          { data: { runId } },
        );
      }
    }
    // Replacements apply one after another where a store rewrites text: a value that is also a key would be
    // replaced again.
    if (replacements.has(to)) {
      throw new CairnError(
        'INVALID_ARGUMENT',
        `A replacing payload string may not also be one that is replaced (run "${runId}").`,
        { data: { runId } },
      );
    }
    // Starting with a letter or digit: in JSON text a quote followed by one opens a string, never closes one.
    if (from.length < minReplacedLength || !/^[A-Za-z0-9]/.test(from)) {
      throw new CairnError(
        'INVALID_ARGUMENT',
        `A replaced payload string must start with a letter or digit and be at least ${minReplacedLength} characters (run "${runId}").`,
        { data: { runId } },
      );
    }
  }
}

/**
 * `value` with every string equal to a key of `replacements` (object keys aside) replaced by its value, and the
 * keys found added to `found`; `value` itself when nothing was replaced, so a caller can tell by identity.
 */
export function replaceStrings(
  value: JsonValue,
  replacements: ReadonlyMap<string, string>,
  found: Set<string>,
): JsonValue {
  if (typeof value === 'string') {
    const to = replacements.get(value);
    if (to === undefined) return value;
    found.add(value);
    return to;
  }
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let copy: JsonValue[] | undefined;
    value.forEach((item, i) => {
      const replaced = replaceStrings(item, replacements, found);
      if (replaced !== item) (copy ??= [...value])[i] = replaced;
    });
    return copy ?? value;
  }
  let copy: Record<string, JsonValue> | undefined;
  for (const [key, item] of Object.entries(value)) {
    const replaced = replaceStrings(item, replacements, found);
    if (replaced !== item) (copy ??= { ...value })[key] = replaced;
  }
  return copy ?? value;
}

/**
 * JSON text with every string value equal to a key of `replacements` replaced, and the keys found added to
 * `found`; for stores that keep payloads as JSON text. Exact for valid JSON text and replacements
 * `checkReplacements` accepted: such a string is written between quotes as it is; a quote after a backslash is
 * inside another string, and a string followed by `:` is an object's key, so neither is replaced.
 */
export function replaceInJsonText(
  text: string,
  replacements: ReadonlyMap<string, string>,
  found: Set<string>,
): string {
  let result = text;
  for (const [from, to] of replacements) {
    const quoted = `"${from}"`;
    let at = result.indexOf(quoted);
    if (at < 0) continue;
    let replaced = '';
    let from0 = 0;
    while (at >= 0) {
      const end = at + quoted.length;
      const escaped = at > 0 && result[at - 1] === '\\';
      const key = /^\s*:/.test(result.slice(end, end + 16));
      if (!escaped && !key) {
        replaced += `${result.slice(from0, at)}"${to}"`;
        from0 = end;
        found.add(from);
      }
      at = result.indexOf(quoted, end);
    }
    result = replaced + result.slice(from0);
  }
  return result;
}
