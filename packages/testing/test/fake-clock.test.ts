import { createFakeClock } from '@cairn/testing';
import { describe, expect, it } from 'vitest';

describe('createFakeClock', () => {
  it('moves only when advanced, firing timers in order', async () => {
    const clock = createFakeClock({ now: 1_000 });
    const fired: string[] = [];
    clock.setTimer(30, () => fired.push(`b@${clock.now()}`));
    clock.setTimer(10, () => fired.push(`a@${clock.now()}`));
    const cancelled = clock.setTimer(20, () => fired.push('cancelled'));
    cancelled.cancel();
    expect(clock.now()).toBe(1_000);
    await clock.advance(25);
    expect(fired).toEqual(['a@1010']);
    expect(clock.now()).toBe(1_025);
    await clock.advance(5);
    expect(fired).toEqual(['a@1010', 'b@1030']);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('resolves sleeps when advanced past them and rejects them on abort', async () => {
    const clock = createFakeClock();
    const start = clock.now();
    let woke = false;
    const sleeping = clock.sleep(100).then(() => (woke = true));
    await clock.advance(99);
    expect(woke).toBe(false);
    await clock.advance(1);
    await sleeping;
    expect(clock.now() - start).toBe(100);

    const controller = new AbortController();
    const aborted = clock.sleep(1_000, controller.signal);
    controller.abort(new Error('stop'));
    await expect(aborted).rejects.toThrow('stop');
    expect(clock.pendingTimers()).toBe(0);
  });

  it('skips time by itself with autoAdvance', async () => {
    const clock = createFakeClock({ autoAdvance: true, now: 0 });
    await clock.sleep(5_000);
    expect(clock.now()).toBe(5_000);
  });
});
