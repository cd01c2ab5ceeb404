import { describe, expect, it } from 'vitest';
import { CairnError } from '../errors.js';
import { checkReplacements, replaceInJsonText, replaceStrings } from './payload-rewrite.js';

const old = 'cairn:1:aes-gcm@k1:AAAAAAAAAAAAAAAAAAAA';
const fresh = 'cairn:1:aes-gcm@k2:BBBBBBBBBBBBBBBBBBBB';
const replacements = new Map([[old, fresh]]);

describe('replacing payload strings', () => {
  it('replaces string values in JSON text, as replaceStrings does in the value', () => {
    const value = { a: old, list: [old, 'other', { b: old }], n: 1 };
    const found = new Set<string>();
    const text = replaceInJsonText(JSON.stringify(value), replacements, found);
    expect(found).toEqual(new Set([old]));
    expect(JSON.parse(text)).toEqual(replaceStrings(value, replacements, new Set()));
    expect(text).not.toContain(old);
  });

  it('leaves an object key, and a quoted copy inside another string, alone', () => {
    const value = { [old]: 1, note: `say "${old}" twice` };
    const found = new Set<string>();
    const text = JSON.stringify(value);
    expect(replaceInJsonText(text, replacements, found)).toBe(text);
    expect(replaceInJsonText(JSON.stringify(value, null, 2), replacements, found)).toBe(
      JSON.stringify(value, null, 2),
    );
    expect(found.size).toBe(0);
    expect(replaceStrings(value, replacements, found)).toBe(value);
  });

  it('refuses what could not be replaced exactly', () => {
    const refused = (map: Map<string, string>) => {
      try {
        checkReplacements('r', map);
      } catch (error) {
        return (error as CairnError).code;
      }
      return 'accepted';
    };
    expect(refused(replacements)).toBe('accepted');
    expect(refused(new Map([['short', fresh]]))).toBe('INVALID_ARGUMENT');
    expect(refused(new Map([[`-${old}`, fresh]]))).toBe('INVALID_ARGUMENT');
    expect(refused(new Map([[`${old}"`, fresh]]))).toBe('INVALID_ARGUMENT');
    expect(refused(new Map([[old, `${fresh}\\`]]))).toBe('INVALID_ARGUMENT');
    expect(refused(new Map([[old, `${fresh}\u00e9`]]))).toBe('INVALID_ARGUMENT');
    // A value that is also a key would be replaced twice by a store that rewrites text.
    expect(
      refused(
        new Map([
          [old, fresh],
          [fresh, `${fresh}C`],
        ]),
      ),
    ).toBe('INVALID_ARGUMENT');
  });
});
