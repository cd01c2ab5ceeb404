import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeBase85, encodeBase85 } from './base85.js';

describe('base 85', () => {
  it('round-trips every length, with five characters for four bytes', () => {
    for (let length = 0; length < 70; length += 1) {
      const bytes = randomBytes(length);
      const text = encodeBase85(bytes);
      expect(text.length).toBe(
        Math.floor(length / 4) * 5 + (length % 4 === 0 ? 0 : (length % 4) + 1),
      );
      expect(decodeBase85(text)?.equals(bytes), `${length} bytes`).toBe(true);
    }
    const edges = Buffer.from([0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255]);
    expect(decodeBase85(encodeBase85(edges))?.equals(edges)).toBe(true);
  });

  it('writes what JSON holds as it is: no quote, backslash, colon or space', () => {
    const text = encodeBase85(randomBytes(4_000));
    expect(text).toMatch(/^[\x21-\x7e]+$/);
    expect(text).not.toMatch(/["\\: ]/);
    expect(JSON.stringify(text)).toBe(`"${text}"`);
  });

  it('refuses what it could not have written', () => {
    expect(decodeBase85('abcde1')).toBeUndefined(); // a last group of one character
    expect(decodeBase85('ab"de')).toBeUndefined(); // not in the alphabet
    expect(decodeBase85('ab\u00e9de')).toBeUndefined();
    expect(decodeBase85('ab\u0130de')).toBeUndefined(); // latin1 would read it as '0'
    expect(decodeBase85('#####')).toBeUndefined(); // more than 32 bits
  });
});
