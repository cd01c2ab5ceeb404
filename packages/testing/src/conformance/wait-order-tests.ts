import { RunWaitingError, pendingApprovals, type DurableStore } from '@cairn/sdk';
import { expect, it } from 'vitest';
import type { ConformanceContext } from './context.js';
import {
  answerTo,
  hashOf,
  hasCode,
  payingPlanner,
  refundAgent,
  startWaiting,
} from './wait-world.js';

/**
 * Registers, end to end through the runtime, how signals take effect on runs that wait (DESIGN invariant 15): in
 * mailbox order, so a steer never undoes an earlier approval; every decision the store accepted is applied
 * (even one accepted while the run woke to decide a timeout); a decision on a call the run no longer waits on is
 * refused, not reported accepted; and a repeated decision answers the one that stands, at any time.
 */
export function waitOrderTests(ctx: ConformanceContext): void {
  it('keeps an approval sent before a steer: the approved call runs, the other is steered off', async () => {
    const store = await ctx.store();
    const { agent, refunds, model } = refundAgent(store);
    await startWaiting(agent, 'r');
    expect(
      await agent.approve('r', 'c-1', { argsHash: await hashOf(store, 'r', 'c-1') }),
    ).toMatchObject({ seq: 1, duplicate: false });
    expect(await agent.steer('r', 'Only the first one, then stop.')).toMatchObject({ seq: 2 });
    const result = await agent.resume('r');
    expect(refunds).toEqual(['o-1']);
    expect(answerTo(result.messages, 'c-1')).toMatchObject({ content: { refunded: 'o-1' } });
    expect(answerTo(result.messages, 'c-2')).toMatchObject({
      isError: true,
      content: { error: 'TOOL_REJECTED', message: expect.stringContaining('new instructions') },
    });
    expect(model.calls.at(-1)!.messages.at(-1)).toEqual({
      role: 'user',
      content: 'Only the first one, then stop.',
    });
  });

  it('lets a steer sent before an approval answer the call first: the later approval changes nothing', async () => {
    const store = await ctx.store();
    const { agent, refunds } = refundAgent(store);
    await startWaiting(agent, 'r');
    const argsHash = await hashOf(store, 'r', 'c-1');
    await agent.steer('r', 'Stop, do not refund anything.');
    await agent.approve('r', 'c-1', { argsHash });
    const result = await agent.resume('r');
    expect(refunds).toEqual([]);
    expect(answerTo(result.messages, 'c-1')).toMatchObject({ content: { error: 'TOOL_REJECTED' } });
  });

  it('applies decisions and messages interleaved in any order by their place in the mailbox', async () => {
    const store = await ctx.store();
    const { agent, refunds, model } = refundAgent(store);
    await startWaiting(agent, 'r');
    await agent.followUp('r', 'Also send a receipt.');
    await store.signal('r', { name: 'billing.note', payload: { any: 'thing' } });
    await agent.reject('r', 'c-2', { reason: 'duplicate order' });
    await agent.approve('r', 'c-1', { argsHash: await hashOf(store, 'r', 'c-1') });
    const result = await agent.resume('r');
    expect(refunds).toEqual(['o-1']);
    expect(answerTo(result.messages, 'c-2')).toMatchObject({
      content: { message: expect.stringContaining('duplicate order') },
    });
    expect(model.calls.at(-1)!.messages.at(-1)).toEqual({
      role: 'user',
      content: 'Also send a receipt.',
    });
  });

  for (const onTimeout of ['reject', 'fail'] as const) {
    it(`applies an approval accepted while the woken run's first checkpoint recorded its timeout (${onTimeout})`, async () => {
      const store = await ctx.store();
      const { agent, refunds, clock } = refundAgent(store, {
        script: [
          { toolCalls: [{ id: 'c-1', name: 'refund', args: { order: 'o-1' } }] },
          { text: 'Done.' },
        ],
        timeoutMs: 60_000,
        onTimeout,
      });
      await startWaiting(agent, 'r');
      const argsHash = await hashOf(store, 'r', 'c-1');
      await clock.advance(60_001);
      let sent = false;
      const result = await agent.resume('r', {
        onBoundary: async (b) => {
          if (sent || b.point !== 'checkpoint.before') return;
          sent = true;
          await agent.approve('r', 'c-1', { argsHash });
        },
      });
      expect(refunds).toEqual(['o-1']);
      expect(result.output).toBe('Done.');
    });
  }

  it('counts a planner node’s first decision, and applies one accepted while the woken planner decided a timeout', async () => {
    const store = await ctx.store();
    const first = payingPlanner(store);
    await startWaiting(first.planner, 'p');
    const argsHash = await hashOf(store, 'p', 'hotel');
    await first.planner.reject('p', 'hotel', { reason: 'too expensive' });
    expect(await first.planner.approve('p', 'hotel', { argsHash })).toMatchObject({
      duplicate: true,
      decision: { approved: false, reason: 'too expensive' },
    });
    const replanned = await first.planner.resume('p');
    expect(first.paid).toEqual([]);
    expect(replanned.nodes.find((n) => n.id === 'hotel')).toMatchObject({
      status: 'failed',
      error: { code: 'TOOL_REJECTED' },
    });

    const late = payingPlanner(store, { timeoutMs: 60_000 });
    await startWaiting(late.planner, 'q');
    const hash = await hashOf(store, 'q', 'hotel');
    await late.clock.advance(60_001);
    let sent = false;
    const result = await late.planner.resume('q', {
      onBoundary: async (b) => {
        if (sent || b.point !== 'checkpoint.before') return;
        sent = true;
        await late.planner.approve('q', 'hotel', { argsHash: hash });
      },
    });
    expect(late.paid).toEqual([45_000]);
    expect(result.nodes).toMatchObject([{ id: 'hotel', status: 'completed' }]);
  });

  it('refuses a decision on a call the run no longer waits on: it timed out and another is held', async () => {
    const inner = await ctx.store();
    // Between a client's look at the run and its send, the run moves on: c-1 times out, c-2 is held.
    const movesOn: { before: (() => Promise<void>) | undefined } = { before: undefined };
    const store: DurableStore = new Proxy(inner, {
      get(target, property, receiver) {
        if (property === 'signal') {
          return async (...args: Parameters<DurableStore['signal']>) => {
            const before = movesOn.before;
            movesOn.before = undefined;
            await before?.();
            return target.signal(...args);
          };
        }
        const value: unknown = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const { agent, refunds, clock } = refundAgent(store, {
      script: [
        { toolCalls: [{ id: 'c-1', name: 'refund', args: { order: 'o-1' } }] },
        { toolCalls: [{ id: 'c-2', name: 'refund', args: { order: 'o-2' } }] },
        { text: 'Done.' },
      ],
      timeoutMs: 60_000,
    });
    await startWaiting(agent, 'r');
    const argsHash = await hashOf(store, 'r', 'c-1');
    movesOn.before = async () => {
      await clock.advance(60_001);
      await expect(agent.resume('r')).rejects.toBeInstanceOf(RunWaitingError);
    };
    const answer = await agent.approve('r', 'c-1', { argsHash }).catch((e: unknown) => e);
    expect(answer).toMatchObject({ code: 'INVALID_ARGUMENT', data: { reason: 'not waiting' } });
    const { run, signals } = (await store.load('r'))!;
    expect(pendingApprovals(run.wait?.detail).map((call) => call.callId)).toEqual(['c-2']);
    expect(signals).toEqual([]);
    expect(refunds).toEqual([]);
  });

  it('answers a retried decision with the same receipt after the run applied it and ended, naming the one that stands', async () => {
    const store = await ctx.store();
    const { agent, refunds } = refundAgent(store);
    await startWaiting(agent, 'r');
    const argsHash = await hashOf(store, 'r', 'c-1');
    const first = await agent.approve('r', 'c-1', { argsHash, by: 'ana' });
    const rejected = await agent.reject('r', 'c-2', { reason: 'duplicate order', by: 'bo' });
    await agent.resume('r');
    expect(refunds).toEqual(['o-1']);
    expect(await agent.approve('r', 'c-1', { argsHash, by: 'ana' })).toEqual({
      ...first,
      duplicate: true,
    });
    // Approving the call that was rejected answers the rejection.
    expect(
      await agent.approve('r', 'c-2', { argsHash: rejected.decision.argsHash, by: 'ana' }),
    ).toEqual({ ...rejected, duplicate: true });
    expect(rejected.decision).toMatchObject({ approved: false, by: 'bo' });
    await expect(agent.approve('r', 'c-9', { argsHash })).rejects.toSatisfy(hasCode('RUN_ENDED'));
  });

  it('ends a run cancelled whatever was decided before or after the cancel: a cancel is not in the mailbox', async () => {
    const store = await ctx.store();
    const { agent, refunds } = refundAgent(store);
    await startWaiting(agent, 'before');
    await agent.approve('before', 'c-1', { argsHash: await hashOf(store, 'before', 'c-1') });
    expect(await store.requestCancel('before')).toBe(true);
    await expect(agent.resume('before')).rejects.toSatisfy(hasCode('RUN_CANCELLED'));

    await startWaiting(agent, 'after');
    const argsHash = await hashOf(store, 'after', 'c-1');
    expect(await store.requestCancel('after')).toBe(true);
    await agent.approve('after', 'c-1', { argsHash });
    await expect(agent.resume('after')).rejects.toSatisfy(hasCode('RUN_CANCELLED'));
    expect(refunds).toEqual([]);
    for (const runId of ['before', 'after'])
      expect((await store.load(runId))!.run.status).toBe('cancelled');
  });

  it('lets a planner take only decisions: messages and other signals to it are read and left aside', async () => {
    const store = await ctx.store();
    const { planner, paid } = payingPlanner(store);
    await startWaiting(planner, 'p');
    const argsHash = await hashOf(store, 'p', 'hotel');
    await store.signal('p', { name: 'cairn.steer', payload: { content: 'cheaper, please' } });
    await store.signal('p', { name: 'billing.note', payload: {} });
    // Not what it waits for: still waiting, nothing ran.
    await expect(planner.resume('p')).rejects.toBeInstanceOf(RunWaitingError);
    await planner.approve('p', 'hotel', { argsHash });
    const result = await planner.resume('p');
    expect(paid).toEqual([45_000]);
    expect(result.nodes).toMatchObject([{ id: 'hotel', status: 'completed' }]);
    expect(await store.mailbox('p')).toEqual([]);
  });
}
