import { CairnError } from './errors.js';

/** What `redactFields` puts in place of a field it masks. */
export const redactedMark = '[redacted]';

/**
 * A function that masks named fields of a value (a tool's result), at any depth, arrays included: `'cvv'` masks
 * every field named `cvv`; a dotted path, `'card.number'`, masks that field of a field named `card`, wherever such
 * a `card` is. A masked field keeps its key and holds `mask` (`'[redacted]'` by default); with `mask: undefined`
 * it is dropped. The value given is not changed: what is masked is a copy.
 */
export function redactFields(
  fields: readonly string[],
  options: { mask?: unknown } = {},
): (value: unknown) => unknown {
  const paths = fields.map((field) => {
    const path = field.split('.');
    if (field === '' || path.some((key) => key === '')) {
      throw new CairnError(
        'INVALID_ARGUMENT',
        `A redacted field is a name or a dotted path, not "${field}".`,
      );
    }
    return path;
  });
  const drop = 'mask' in options && options.mask === undefined;
  const mask = 'mask' in options ? options.mask : redactedMark;
  // `open`: the paths that began above and continue here, by how far they got.
  const walk = (value: unknown, open: ReadonlyArray<readonly string[]>): unknown => {
    if (Array.isArray(value)) return value.map((item) => walk(item, open));
    if (value === null || typeof value !== 'object' || value instanceof Date) return value;
    const copy: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) {
      const continuing = [...paths, ...open].filter((path) => path[0] === key);
      if (continuing.some((path) => path.length === 1)) {
        if (!drop) copy[key] = mask;
        continue;
      }
      copy[key] = walk(
        child,
        continuing.map((path) => path.slice(1)),
      );
    }
    return copy;
  };
  return (value) => walk(value, []);
}
