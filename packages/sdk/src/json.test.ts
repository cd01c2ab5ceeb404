import { describe, expect, it } from 'vitest';
import { canonicalJson, StorableViews, storableJson, storableView } from './json.js';

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

describe('StorableViews', () => {
  it('checks what is new in a state that grew, and finds a bad string beside parts checked before', () => {
    const views = new StorableViews();
    const first = { role: 'user', content: 'go' };
    const before = { messages: [first] };
    expect(views.view(before)).toBe(before);
    const cut = { role: 'tool', content: `cut ${'😀'.slice(0, 1)}` };
    const grown = { messages: [first, cut] };
    expect(views.view(grown)).toEqual({
      messages: [first, { role: 'tool', content: 'cut \ufffd' }],
    });
    expect(cut.content).toBe(`cut ${'😀'.slice(0, 1)}`);
    // A key, a part of another kind than before, an object that says what its JSON is.
    const key = { [`k${'😀'.slice(1)}`]: 1 };
    expect(views.view({ messages: [first], key })).toEqual({
      messages: [first],
      key: { 'k\ufffd': 1 },
    });
    const dated = { messages: { at: new Date(0), bad: 'a\u0000b' } };
    expect(views.view(dated)).toEqual({
      messages: { at: '1970-01-01T00:00:00.000Z', bad: 'a\ufffdb' },
    });
    const fine = { messages: [first, { role: 'tool', content: 'ok' }], n: 1 };
    expect(views.view(fine)).toBe(fine);
  });

  it('refuses what JSON cannot write, beside parts checked before too', () => {
    const views = new StorableViews();
    const first = { a: 1 };
    views.view({ list: [first] });
    expect(() => views.view({ list: [first, { n: 1n }] })).toThrow(TypeError);
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = { back: cyclic };
    expect(() => views.view({ list: [first, cyclic] })).toThrow(TypeError);
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
