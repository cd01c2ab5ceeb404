import {
  CairnError,
  defineAgent,
  defineTool,
  isCairnError,
  pendingApprovals,
  RunWaitingError,
  type BoundaryHook,
  type DurableStore,
  type ModelMessage,
} from '@cairn/sdk';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { SimulatedCrash } from '../crash-harness.js';
import { createFakeClock } from '../fake-clock.js';
import { scriptedModel } from '../scripted-model.js';
import type { ConformanceContext } from './context.js';
import {
  failingSaves,
  hashOf,
  hasCode,
  payingPlanner,
  quickRetry,
  refundAgent,
  startWaiting,
} from './wait-world.js';

const users = (messages: readonly ModelMessage[]) =>
  messages.filter((m) => m.role === 'user').map((m) => m.content);

/**
 * Registers, end to end through the runtime, how runs that wait recover: an attempt woken from a wait whose first
 * checkpoint keeps failing gives the run back to its wait; a run whose every attempt fails before it can go on
 * is dead-lettered (DESIGN invariant 10); and an attempt that recovers a run reads the mail its crashed holder had
 * not read before its first model call.
 */
export function waitRecoveryTests(ctx: ConformanceContext): void {
  it('gives a woken planner back to its wait when its first checkpoint keeps failing, and continues it later', async () => {
    const down = { on: false };
    const store = failingSaves(await ctx.store(), () => down.on);
    const { planner, paid } = payingPlanner(store, { storeRetry: quickRetry });
    await startWaiting(planner, 'p');
    await planner.approve('p', 'hotel', { argsHash: await hashOf(store, 'p', 'hotel') });
    down.on = true;
    await expect(planner.resume('p')).rejects.toSatisfy(hasCode('RUN_SUSPENDED'));
    down.on = false;
    const { run } = (await store.load('p'))!;
    expect(run).toMatchObject({ status: 'waiting', owner: null, stalls: 1 });
    expect(pendingApprovals(run.wait?.detail)).toMatchObject([{ callId: 'hotel' }]);
    const result = await planner.resume('p');
    expect(result.nodes).toMatchObject([{ id: 'hotel', status: 'completed' }]);
    expect(paid).toEqual([45_000]);
    expect((await store.load('p'))!.run.stalls).toBe(0);
  });

  it('gives a woken agent back to its wait the same way', async () => {
    const down = { on: false };
    const store = failingSaves(await ctx.store(), () => down.on);
    const { agent, refunds } = refundAgent(store, {
      script: [
        { toolCalls: [{ id: 'c-1', name: 'refund', args: { order: 'o-1' } }] },
        { text: 'Done.' },
      ],
      storeRetry: quickRetry,
    });
    await startWaiting(agent, 'a');
    await agent.approve('a', 'c-1', { argsHash: await hashOf(store, 'a', 'c-1') });
    down.on = true;
    await expect(agent.resume('a')).rejects.toSatisfy(hasCode('RUN_SUSPENDED'));
    down.on = false;
    expect((await store.load('a'))!.run).toMatchObject({ status: 'waiting', stalls: 1 });
    await expect(agent.resume('a')).resolves.toMatchObject({ output: 'Done.' });
    expect(refunds).toEqual(['o-1']);
  });

  it('continues a planner an earlier version left suspended without its wait', async () => {
    const store = await ctx.store();
    const { planner, paid } = payingPlanner(store);
    await startWaiting(planner, 'p');
    await planner.approve('p', 'hotel', { argsHash: await hashOf(store, 'p', 'hotel') });
    // What that version stored: the status update of the suspension cleared the wait.
    const lease = (await store.acquire('p', { owner: 'old', ttlMs: 60_000 }))!;
    await store.updateStatus(lease, { status: 'suspended' });
    await store.release(lease);
    expect((await store.load('p'))!.run).toMatchObject({ status: 'suspended', wait: null });
    const result = await planner.resume('p');
    expect(result.nodes).toMatchObject([{ id: 'hotel', status: 'completed' }]);
    expect(paid).toEqual([45_000]);
  });

  it('dead-letters a run whose checkpoints the store keeps refusing, after maxStalls attempts, with the reason', async () => {
    const refused = () =>
      new CairnError('STORE_FAILED', 'value too long for type character varying');
    const store = failingSaves(await ctx.store(), () => true, refused);
    const agent = defineAgent({
      name: 'stuck',
      model: scriptedModel([{ text: 'never reached' }]),
      tools: [],
      durable: { store, clock: createFakeClock({ autoAdvance: true }), storeRetry: quickRetry },
    });
    const codes: string[] = [];
    const attempt = (run: () => Promise<unknown>) =>
      run().then(
        () => codes.push('completed'),
        (e: unknown) => codes.push(isCairnError(e) ? e.code : String(e)),
      );
    await attempt(() => agent.execute('Hello', { runId: 's' }));
    for (let i = 0; i < 6; i += 1) await attempt(() => agent.resume('s'));
    expect(codes).toEqual([
      ...Array(5).fill('RUN_SUSPENDED'),
      'RUN_DEAD_LETTERED',
      'RUN_DEAD_LETTERED',
    ]);
    const { run } = (await store.load('s'))!;
    expect(run.status).toBe('dead_lettered');
    expect(run.error?.message).toContain('value too long');
  });

  it('does not claim a waiting run that is not due: a resume that died in between would leave it held', async () => {
    const store = await ctx.store();
    const { agent } = refundAgent(store);
    await startWaiting(agent, 'r');
    const before = (await store.load('r'))!.run;
    for (let i = 0; i < 3; i += 1)
      await expect(agent.resume('r')).rejects.toBeInstanceOf(RunWaitingError);
    // No claim was made: nobody holds it, its epoch and recoveries are as the wait left them.
    expect((await store.load('r'))!.run).toMatchObject({
      status: 'waiting',
      owner: null,
      epoch: before.epoch,
      recoveries: 0,
    });
  });

  it('runs an approved call its crashed holder had checkpointed, though steers came meanwhile (simulation seed 1248)', async () => {
    const store = await ctx.store();
    const { agent, refunds } = refundAgent(store, {
      script: [
        { toolCalls: [{ id: 'c-1', name: 'refund', args: { order: 'o-1' } }] },
        { text: 'Done.' },
      ],
      leaseMs: ctx.harness().shortTtlMs,
    });
    await startWaiting(agent, 'r');
    await agent.approve('r', 'c-1', { argsHash: await hashOf(store, 'r', 'c-1') });
    // The woken attempt checkpoints the approved call as pending, then its process dies before starting it.
    const died = await agent
      .resume('r', {
        onBoundary: (b) => {
          if (b.point === 'checkpoint.after') throw new SimulatedCrash(b);
        },
      })
      .catch((e: unknown) => e);
    expect(died).toBeInstanceOf(SimulatedCrash);
    await agent.steer('r', 'Also say thanks.');
    await ctx.harness().expireLeases();
    const result = await agent.resume('r');
    expect(refunds).toEqual(['o-1']);
    expect(result.messages.find((m) => m.role === 'tool')).toMatchObject({
      content: { refunded: 'o-1' },
    });
  });

  for (const when of ['after the trip’s checkpoint', 'during the model call'] as const) {
    it(`hands a steer sent just before a crash (${when}) to the recovering attempt before its first model call`, async () => {
      const store = await ctx.store();
      for (let tries = 1; ; tries += 1) {
        const world = steeredAgent(store, when === 'after the trip’s checkpoint');
        const runId = `steered-${tries}`;
        const crashAt: BoundaryHook =
          when === 'after the trip’s checkpoint'
            ? (b) => {
                if (world.crashed || b.point !== 'checkpoint.after' || !world.noted.includes('b'))
                  return;
                world.crashed = true;
                throw new SimulatedCrash(b);
              }
            : async (b) => {
                if (world.crashed || b.point !== 'effect.before' || b.effectId !== 'trip-2/model')
                  return;
                world.crashed = true;
                await world.agent.steer(runId, 'Stop noting; summarize.');
                throw new SimulatedCrash(b);
              };
        const died = await world.agent
          .execute('Note a to e.', { runId, onBoundary: crashAt })
          .catch((e: unknown) => e);
        // A short lease may run out before the crash point on a slow store: try again on a new run.
        if (isCairnError(died) && died.code === 'LEASE_LOST' && tries < 5) continue;
        expect(died).toBeInstanceOf(SimulatedCrash);
        const callsBefore = world.model.calls.length;
        await ctx.harness().expireLeases();
        await world.agent.resume(runId);
        expect(users(world.model.calls[callsBefore]!.messages)).toEqual([
          'Note a to e.',
          'Stop noting; summarize.',
        ]);
        return;
      }
    });
  }

  /** A six-trip agent taking notes; with `steerFromTool`, its `note` tool steers the run while trip 1's call runs. */
  function steeredAgent(store: DurableStore, steerFromTool: boolean) {
    const world = { crashed: false, noted: [] as string[] };
    const self: { agent?: { steer(runId: string, text: string): Promise<unknown> } } = {};
    const note = defineTool({
      name: 'note',
      description: 'Takes a note.',
      input: z.object({ text: z.string() }),
      execute: async ({ text }, context) => {
        world.noted.push(text);
        if (steerFromTool && text === 'b')
          await self.agent!.steer(context.runId, 'Stop noting; summarize.');
        return { noted: text };
      },
    });
    const model = scriptedModel([
      ...['a', 'b', 'c', 'd', 'e'].map((text, trip) => ({
        toolCalls: [{ id: `n${trip}`, name: 'note', args: { text } }],
      })),
      { text: 'Summary.' },
    ]);
    const agent = defineAgent({
      name: 'noter',
      model,
      tools: [note],
      maxTrips: 6,
      durable: { store, leaseMs: ctx.harness().shortTtlMs },
    });
    self.agent = agent;
    return Object.assign(world, { agent, model });
  }
}
