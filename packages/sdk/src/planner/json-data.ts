import { z } from 'zod';
import type { JsonValue } from '../json.js';

/**
 * Whether a value is JSON: null, a boolean, a finite number, a string, or arrays and plain objects of those.
 * A loop with its own stack, so any depth is safe.
 */
function isJsonData(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (item === null || typeof item === 'string' || typeof item === 'boolean') continue;
    if (typeof item === 'number') {
      if (!Number.isFinite(item)) return false;
      continue;
    }
    if (typeof item !== 'object') return false;
    if (Array.isArray(item)) {
      for (const element of item) stack.push(element);
      continue;
    }
    const prototype = Object.getPrototypeOf(item) as unknown;
    if (prototype !== Object.prototype && prototype !== null) return false;
    for (const property of Object.values(item)) stack.push(property);
  }
  return true;
}

/**
 * A node input, a node output or a plan output: checked to be JSON and kept as it is. `z.json()` would hand
 * back a copy built by assignment, in which a `"__proto__"` key sets the prototype instead of staying data,
 * and it recurses once per level of nesting.
 */
export const jsonData: z.ZodType<JsonValue> = z.custom<JsonValue>(isJsonData, {
  message: 'Expected JSON: null, a boolean, a finite number, a string, an array or a plain object',
});
