import type { JsonValue } from '../json.js';

/**
 * A reference to another node's output inside a node's input (or the plan's output): an object whose only
 * key is `$ref`, naming `nodeId` for the whole output or `nodeId.field.0.sub` for a part of it.
 */
export interface NodeRef {
  node: string;
  /** Object keys and array indexes, outermost first. */
  path: string[];
}

/** The reference a value is, if it is one. */
export function asRef(value: JsonValue): NodeRef | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const keys = Object.keys(value);
  const target = value.$ref;
  if (keys.length !== 1 || typeof target !== 'string') return undefined;
  const [node = '', ...path] = target.split('.');
  return { node, path };
}

/** Every reference inside a value, in document order. */
export function collectRefs(value: JsonValue): NodeRef[] {
  const ref = asRef(value);
  if (ref !== undefined) return [ref];
  if (Array.isArray(value)) return value.flatMap(collectRefs);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(collectRefs);
  return [];
}

/** What resolving references gives: the value with every reference replaced, or why one did not resolve. */
export type Resolution = { ok: true; value: JsonValue } | { ok: false; message: string };

/** Replaces every reference in a value by the output it names. */
export function resolveRefs(value: JsonValue, outputs: ReadonlyMap<string, JsonValue>): Resolution {
  const ref = asRef(value);
  if (ref !== undefined) return resolveRef(ref, outputs);
  if (Array.isArray(value)) {
    const items: JsonValue[] = [];
    for (const item of value) {
      const resolved = resolveRefs(item, outputs);
      if (!resolved.ok) return resolved;
      items.push(resolved.value);
    }
    return { ok: true, value: items };
  }
  if (value !== null && typeof value === 'object') {
    const entries: Array<[string, JsonValue]> = [];
    for (const [key, item] of Object.entries(value)) {
      const resolved = resolveRefs(item, outputs);
      if (!resolved.ok) return resolved;
      entries.push([key, resolved.value]);
    }
    // Defined, not assigned: a "__proto__" key stays a key.
    return { ok: true, value: Object.fromEntries(entries) as { [key: string]: JsonValue } };
  }
  return { ok: true, value };
}

function resolveRef(ref: NodeRef, outputs: ReadonlyMap<string, JsonValue>): Resolution {
  const name = [ref.node, ...ref.path].join('.');
  if (!outputs.has(ref.node)) {
    return { ok: false, message: `{"$ref":"${name}"}: node "${ref.node}" has no output.` };
  }
  let current = outputs.get(ref.node) ?? null;
  for (const [depth, segment] of ref.path.entries()) {
    const next = child(current, segment);
    if (next === undefined) {
      const at = [ref.node, ...ref.path.slice(0, depth)].join('.');
      return {
        ok: false,
        message: `{"$ref":"${name}"}: ${at} is ${preview(current)}, which has no "${segment}".`,
      };
    }
    current = next;
  }
  return { ok: true, value: current };
}

function child(value: JsonValue, segment: string): JsonValue | undefined {
  if (Array.isArray(value)) return /^\d+$/.test(segment) ? value[Number(segment)] : undefined;
  if (value !== null && typeof value === 'object' && Object.hasOwn(value, segment)) {
    return value[segment];
  }
  return undefined;
}

function preview(value: JsonValue): string {
  const text = JSON.stringify(value);
  return text.length <= 120 ? text : `${text.slice(0, 117)}...`;
}
