import { describe, expect, it } from 'vitest';
import { canonicalJson, storableJson, storableView } from './json.js';

describe('storableJson', () => {
  it('replaces NUL and lone surrogates, in values and keys, and keeps everything else as it was', () => {
    const cut = '😀'.slice(0, 1);
    const value = {
      text: `a\u0000b${cut}c`,
      [`key${cut}`]: ['😀 kept', `${'😀'.slice(1)} low half`, 'plain \\u0000 text'],
      n: 1.5,
      nothing: null,
    };
    expect(storableJson(value)).toEqual({
      text: 'a\ufffdb\ufffdc',
      'key\ufffd': ['😀 kept', '\ufffd low half', 'plain \\u0000 text'],
      n: 1.5,
      nothing: null,
    });
  });

  it('returns a copy of a value with nothing to replace', () => {
    const value = { a: [1, 'two', { three: true }] };
    const copy = storableJson(value);
    expect(copy).toEqual(value);
    expect(copy).not.toBe(value);
  });
});

describe('storableView', () => {
  it('is the value itself when every string is storable, and refuses what is not JSON', () => {
    const value = { a: [1, 'two', { three: '😀' }] };
    expect(storableView(value)).toBe(value);
    expect(() => storableView({ n: 1n })).toThrow(TypeError);
  });

  it('is a storable copy when a string needs a replacement, the value left as it was', () => {
    const value = { messages: [{ content: `cut ${'😀'.slice(0, 1)}` }], nul: 'a\u0000b' };
    const view = storableView(value);
    expect(view).toEqual({ messages: [{ content: 'cut \ufffd' }], nul: 'a\ufffdb' });
    expect(value.messages[0]!.content).toBe(`cut ${'😀'.slice(0, 1)}`);
  });
});

describe('a __proto__ key, as JSON.parse makes it (an own key)', () => {
  it('stays a key through storableJson and canonicalJson, and never becomes a prototype', () => {
    const value = JSON.parse('{"b":"\\u0000","__proto__":{"admin":true}}') as Record<
      string,
      unknown
    >;
    const stored = storableJson(value);
    expect(Object.getPrototypeOf(stored)).toBe(Object.prototype);
    expect(stored.admin).toBeUndefined();
    expect(JSON.stringify(stored)).toBe('{"b":"\ufffd","__proto__":{"admin":true}}');
    expect(canonicalJson(value)).toBe('{"__proto__":{"admin":true},"b":"\\u0000"}');
  });
});
