import {
  defineAgent,
  defineTool,
  memoryStore,
  type Boundary,
  type BoundaryHook,
  type Model,
  type ModelResponse,
  type PruneOptions,
} from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';

// Type-level friction a new user met (issue 15, point 6). `pnpm typecheck` checks this file twice: with this
// repository's settings, and with a typical app's (tsconfig.user-types.json: no exactOptionalPropertyTypes).
describe('types a user writes against', () => {
  it('a boundary hook may be a one-line arrow that returns a value', async () => {
    expectTypeOf<(boundary: Boundary) => number>().toExtend<BoundaryHook>();
    const seen: Boundary[] = [];
    const agent = defineAgent({
      name: 'hooked',
      model: scriptedModel([{ text: 'hi' }]),
      durable: { store: memoryStore() },
    });
    await agent.execute('go', { onBoundary: (boundary) => seen.push(boundary) });
    expect(seen.map((boundary) => boundary.point)).toContain('checkpoint.after');
  });

  it('a boundary names the marks a journal write carries as started:<id> or settled:<id>', () => {
    expectTypeOf<Boundary['entries']>().toEqualTypeOf<readonly string[] | undefined>();
  });

  it('prune takes any status, the final ones by default', () => {
    expectTypeOf<{ olderThan: number; status: 'dead_lettered' }>().toExtend<PruneOptions>();
  });

  it('a hand-written model may answer tool calls whose arguments differ in shape', async () => {
    // TypeScript widens this array's elements to one type, giving the second `to?: undefined`: no annotation
    // should be needed for it to be a model's answer.
    const calls = [
      { id: 'e1', name: 'email', args: { to: 'ana@example.com', body: 'hello' } },
      { id: 'n1', name: 'note', args: { body: 'call back' } },
    ];
    expectTypeOf(calls).toExtend<ModelResponse['toolCalls']>();
    let turn = 0;
    const model: Model = {
      name: 'hand-written',
      provider: 'local',
      async generate() {
        turn += 1;
        return {
          message: { role: 'assistant', content: turn === 1 ? '' : 'sent' },
          toolCalls: turn === 1 ? calls : [],
          usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
        };
      },
    };
    const received: unknown[] = [];
    const tool = (name: string) =>
      defineTool({
        name,
        description: name,
        input: z.object({ to: z.string().optional(), body: z.string() }),
        execute: (args) => {
          received.push(args);
          return 'ok';
        },
      });
    const agent = defineAgent({
      name: 'hand-written-model',
      model,
      tools: [tool('email'), tool('note')],
      durable: { store: memoryStore() },
    });
    expect(await agent.execute('go')).toMatchObject({ output: 'sent' });
    expect(received).toEqual([{ to: 'ana@example.com', body: 'hello' }, { body: 'call back' }]);
  });
});
