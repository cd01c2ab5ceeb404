import { definePlanner, defineTool, memoryStore } from '@cairn/sdk';
import { createFakeClock, scriptedModel } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

describe('planner scheduling', () => {
  it('starts a node as soon as its dependencies settle, and checkpoints after every settled node', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const store = memoryStore({ clock });
    let releaseSlow: () => void = () => undefined;
    const slowHeld = new Promise<void>((resolve) => (releaseSlow = resolve));
    const started: string[] = [];
    const tool = (name: string, wait?: Promise<void>) =>
      defineTool({
        name,
        description: name,
        input: z.object({}),
        idempotent: true,
        execute: async () => {
          started.push(name);
          if (wait !== undefined) await wait;
          return { done: name };
        },
      });
    const plan = {
      nodes: [
        { id: 'slow', capability: 'slow', input: {}, dependsOn: [] },
        { id: 'fast', capability: 'fast', input: {}, dependsOn: [] },
        { id: 'next', capability: 'next', input: {}, dependsOn: ['fast'] },
      ],
    };
    const planner = definePlanner({
      name: 'schedule',
      model: scriptedModel([{ text: JSON.stringify(plan) }]),
      capabilities: [
        { name: 'slow', description: 'Takes long.', executable: tool('slow', slowHeld) },
        { name: 'fast', description: 'Quick.', executable: tool('fast') },
        { name: 'next', description: 'After fast.', executable: tool('next') },
      ],
      maxParallel: 2,
      durable: { store, clock },
    });
    const run = planner.execute('go', { runId: 's1' });
    // `next` starts while `slow` is still running: it does not wait for a wave to end.
    while (!started.includes('next')) await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual(['slow', 'fast', 'next']);
    // Each settled node was checkpointed while `slow` runs.
    while (
      ((await store.load('s1'))?.run.snapshot as { state: { ledger: unknown[] } }).state.ledger
        .length < 2
    ) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    const { state } = (await store.load('s1'))?.run.snapshot as {
      state: { ledger: Array<{ id: string }>; running: string[] };
    };
    expect(state.ledger.map((entry) => entry.id)).toEqual(['fast', 'next']);
    expect(state.running).toEqual(['slow']);
    releaseSlow();
    expect((await run).nodes.map((node) => node.id)).toEqual(['fast', 'next', 'slow']);
  });
});
