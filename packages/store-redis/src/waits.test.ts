import { describe, expect, it } from 'vitest';
import { clockArg, consumedArg, waitArgs } from './waits.js';

describe('waitArgs', () => {
  it('gives the scripts the wait, its time and its names joined by NUL, and three blanks for none', () => {
    expect(waitArgs(null)).toEqual(['', '', '']);
    const wait = { until: 1_700_000_000_000.5, signals: ['a', 'b ✓'], detail: { x: 1 } };
    expect(waitArgs(wait)).toEqual([JSON.stringify(wait), '1700000000000.5', 'a\u0000b ✓']);
    expect(waitArgs({ until: null, signals: ['a'] })[1]).toBe('');
  });

  it('leaves out a name holding NUL, which no signal can bear, so no part of it wakes the run', () => {
    expect(waitArgs({ until: 5, signals: ['a\u0000b', 'c'] })[2]).toBe('c');
  });
});

describe('consumedArg', () => {
  it('passes whole seqs, and nothing for a value under the first seq', () => {
    expect(consumedArg(undefined)).toBe('');
    expect(consumedArg(0)).toBe('');
    expect(consumedArg(-3)).toBe('');
    expect(consumedArg(Number.NaN)).toBe('');
    expect(consumedArg(-Infinity)).toBe('');
    expect(consumedArg(2.5)).toBe('2');
    expect(consumedArg(7)).toBe('7');
    expect(consumedArg(Infinity)).toBe(String(Number.MAX_SAFE_INTEGER));
  });
});

describe('clockArg', () => {
  it('passes a finite reading, nothing for none, and no NaN or infinity', () => {
    expect(clockArg(undefined)).toBe('');
    expect(clockArg(1_700_000_000_000)).toBe('1700000000000');
    expect(clockArg(Infinity)).toBe(String(Number.MAX_VALUE));
    expect(clockArg(-Infinity)).toBe(String(-Number.MAX_VALUE));
    expect(clockArg(Number.NaN)).toBe(String(-Number.MAX_VALUE));
  });
});
