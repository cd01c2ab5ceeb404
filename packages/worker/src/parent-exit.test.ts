import { createFakeClock } from '@cairn/testing/model';
import { describe, expect, it } from 'vitest';
import { startedByPackageManager, watchParent } from './parent-exit.js';

describe('watchParent', () => {
  it('calls back once, with the first parent, when the process is reparented', async () => {
    const clock = createFakeClock();
    let ppid = 4242;
    const exits: number[] = [];
    watchParent((parent) => exits.push(parent), { clock, ppid: () => ppid, intervalMs: 500 });

    await clock.advance(5_000);
    expect(exits).toEqual([]);
    ppid = 1;
    await clock.advance(500);
    expect(exits).toEqual([4242]);
    ppid = 77;
    await clock.advance(5_000);
    expect(exits).toEqual([4242]);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('compares with the parent at start, not with 1: reparented to a subreaper, or a child of init from the start', async () => {
    const clock = createFakeClock();
    let ppid = 1;
    const exits: number[] = [];
    watchParent((parent) => exits.push(parent), { clock, ppid: () => ppid });
    await clock.advance(60_000);
    expect(exits).toEqual([]);

    const reaped: number[] = [];
    watchParent((parent) => reaped.push(parent), { clock, ppid: () => ppid, parent: 300 });
    await clock.advance(500);
    expect(reaped).toEqual([300]);
    ppid = 2;
    await clock.advance(500);
    expect(exits).toEqual([1]);
  });

  it('calls nothing and leaves no timer once stopped', async () => {
    const clock = createFakeClock();
    let ppid = 10;
    const exits: number[] = [];
    const stop = watchParent((parent) => exits.push(parent), { clock, ppid: () => ppid });
    stop();
    ppid = 1;
    await clock.advance(5_000);
    expect(exits).toEqual([]);
    expect(clock.pendingTimers()).toBe(0);
  });
});

describe('startedByPackageManager', () => {
  it.each([
    { env: { npm_lifecycle_event: 'npx' }, expected: true },
    { env: { npm_lifecycle_event: 'start' }, expected: true },
    { env: { npm_lifecycle_event: '' }, expected: false },
    { env: {}, expected: false },
  ])('$env: $expected', ({ env, expected }) => {
    expect(startedByPackageManager(env)).toBe(expected);
  });
});
