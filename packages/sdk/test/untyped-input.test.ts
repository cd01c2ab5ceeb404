import { defineAgent, definePlanner, defineTool, memoryStore } from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

// Issue 16, point 10: untyped JavaScript passes what the types forbid. The input is checked where it enters,
// before any store sees the run.
describe('an input the definition cannot start from', () => {
  it('is refused by execute with INVALID_ARGUMENT, and no run is created', async () => {
    const store = memoryStore();
    const agent = defineAgent({
      name: 'typed',
      model: scriptedModel([{ text: 'never asked' }]),
      durable: { store },
    });
    for (const input of [42, null, { text: 'hi' }, ['hi']]) {
      const runId = `untyped-${JSON.stringify(input)}`;
      await expect(agent.execute(input as never, { runId })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        data: { runId, input: true },
      });
      expect(await store.load(runId)).toBeUndefined();
    }
    expect(await store.list()).toEqual([]);
  });

  it('is refused by a planner too', async () => {
    const store = memoryStore();
    const planner = definePlanner({
      name: 'typed-planner',
      model: scriptedModel([{ text: '{"nodes":[]}' }]),
      capabilities: [
        {
          name: 'echo',
          description: 'Echoes.',
          executable: defineTool({
            name: 'echo',
            description: 'Echoes.',
            input: z.object({ text: z.string() }),
            execute: ({ text }) => text,
          }),
        },
      ],
      durable: { store },
    });
    await expect(planner.execute(7 as never, { runId: 'p' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(await store.load('p')).toBeUndefined();
  });
});
