import { describe, expect, it } from 'vitest';
import { jsonClone } from '../json.js';
import { jsonCopyBeside } from './json-copies.js';

describe('jsonCopyBeside', () => {
  it('copies as JSON does: dropped values, numbers JSON has no word for, dates, a __proto__ key', () => {
    const value = JSON.parse('{"__proto__":{"admin":true}}') as Record<string, unknown>;
    Object.assign(value, {
      gone: undefined,
      fn: () => 1,
      list: [undefined, Number.NaN, -0, Infinity, 'text', true, null],
      at: new Date(0),
    });
    const copy = jsonCopyBeside(value, undefined, undefined);
    expect(JSON.stringify(copy)).toBe(JSON.stringify(jsonClone(value)));
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.keys(copy)).toEqual(['__proto__', 'list', 'at']);
  });

  it('shares the copies of the parts the previous value held at the same place, and copies the rest', () => {
    const first = { role: 'user', content: 'go' };
    const before = { messages: [first], trips: 0 };
    const beforeCopy = jsonCopyBeside(before, undefined, undefined);
    expect(beforeCopy).toEqual(before);
    expect(beforeCopy.messages[0]).not.toBe(first);

    const added = { role: 'assistant', content: 'hi' };
    const after = { messages: [first, added], trips: 1 };
    const afterCopy = jsonCopyBeside(after, before, beforeCopy);
    expect(afterCopy).toEqual(after);
    expect(afterCopy.messages[0]).toBe(beforeCopy.messages[0]);
    expect(afterCopy.messages[1]).not.toBe(added);
    // Moved to another place, a part is copied again.
    const moved = jsonCopyBeside({ messages: [added, first], trips: 1 }, after, afterCopy);
    expect(moved.messages[1]).not.toBe(afterCopy.messages[0]);
    expect(moved.messages[1]).toEqual(first);
  });

  it('refuses what JSON cannot write', () => {
    expect(() => jsonCopyBeside({ n: 1n }, undefined, undefined)).toThrow(TypeError);
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = { back: cyclic };
    expect(() => jsonCopyBeside(cyclic, undefined, undefined)).toThrow(TypeError);
    const shared = { a: 1 };
    expect(jsonCopyBeside({ x: shared, y: [shared] }, undefined, undefined)).toEqual({
      x: { a: 1 },
      y: [{ a: 1 }],
    });
  });
});
