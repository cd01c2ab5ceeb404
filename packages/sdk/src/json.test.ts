import { describe, expect, it } from 'vitest';
import { storableJson } from './json.js';

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
