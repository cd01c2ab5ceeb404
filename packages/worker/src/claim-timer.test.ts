import { describe, expect, it } from 'vitest';
import { delayBeforeNextPass } from './claim-timer.js';

describe('delayBeforeNextPass', () => {
  it('sleeps the poll interval when nothing waits for a time, or the time is further away', () => {
    expect(delayBeforeNextPass(1_000, null, 0, 0)).toBe(1_000);
    expect(delayBeforeNextPass(1_000, 5_000, 0, 0)).toBe(1_000);
  });

  it('wakes at the earliest wake-up when it comes before the poll', () => {
    expect(delayBeforeNextPass(1_000, 300, 0, 100)).toBe(200);
  });

  it('passes again at once for a wake-up that fell due during the pass', () => {
    expect(delayBeforeNextPass(1_000, 50, 0, 100)).toBe(0);
  });

  it('does not spin on a wake-up that was due before the pass: that run was left alone on purpose', () => {
    expect(delayBeforeNextPass(1_000, 0, 0, 100)).toBe(1_000);
    expect(delayBeforeNextPass(1_000, -5, 0, 0)).toBe(1_000);
  });
});
