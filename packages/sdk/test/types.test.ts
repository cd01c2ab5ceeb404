import {
  defineAgent,
  definePlanner,
  defineTool,
  memoryStore,
  type Boundary,
  type AnyTool,
  type BoundaryHook,
  type Model,
  type ModelResponse,
  type PruneOptions,
  waitUntilTool,
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

  it('an approval rule is typed by its tool’s input, and names only the agent’s tools (issue 30)', () => {
    const refund = defineTool({
      name: 'refund',
      description: 'Refunds an order.',
      input: z.object({ order: z.string(), cents: z.number().int() }),
      execute: ({ cents }) => ({ refunded: cents }),
    });
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks an order up.',
      input: z.object({ order: z.string() }),
      execute: ({ order }) => ({ order }),
    });
    const model = scriptedModel([{ text: 'ok' }]);
    const agent = defineAgent({
      name: 'typed-approvals',
      model,
      tools: [refund, lookup],
      approval: {
        tools: {
          refund: (args) => {
            expectTypeOf(args).toEqualTypeOf<{ order: string; cents: number }>();
            return args.cents > 10_000;
          },
          lookup: false,
        },
      },
    });
    expect(agent.name).toBe('typed-approvals');
    defineAgent({
      name: 'wrong-field',
      model,
      tools: [refund],
      // @ts-expect-error: refund's input has no `amount`
      approval: { tools: { refund: (args) => args.amount > 10 } },
    });
    expect(() =>
      defineAgent({
        name: 'unknown-tool',
        model,
        tools: [refund],
        // @ts-expect-error: the agent has no tool named `refnud` (refused when it runs, too)
        approval: { tools: { refnud: true } },
      }),
    ).toThrow(/not one of its tools/);
    // With the wait tool among them, still typed.
    defineAgent({
      name: 'with-a-sleep',
      model,
      tools: [refund, waitUntilTool()],
      // @ts-expect-error: refund's input has no `amount`
      approval: { tools: { refund: (args) => args.amount > 10, wait_until: false } },
    });
    // Tools typed only as AnyTool[]: any name, any arguments (the runtime still checks the names).
    const widened: AnyTool[] = [refund];
    defineAgent({
      name: 'widened',
      model,
      tools: widened,
      approval: { tools: { refund: (args: { cents: number }) => args.cents > 1 } },
    });
  });

  it('a planner’s approval rule is typed by its capability’s input, and names only its capabilities', () => {
    const pay = defineTool({
      name: 'pay',
      description: 'Pays.',
      input: z.object({ cents: z.number().int() }),
      execute: ({ cents }) => ({ paid: cents }),
    });
    const concierge = defineAgent({ name: 'concierge', model: scriptedModel([{ text: 'ok' }]) });
    const model = scriptedModel([{ text: '{"nodes":[]}' }]);
    const capabilities = [
      { name: 'pay', description: 'Pay.', executable: pay },
      { name: 'hotel', description: 'Book a hotel.', executable: concierge },
    ] as const;
    definePlanner({
      name: 'typed-planner',
      model,
      capabilities,
      approval: {
        capabilities: {
          pay: (input) => {
            expectTypeOf(input).toEqualTypeOf<{ cents: number }>();
            return input.cents > 10_000;
          },
          hotel: (task) => {
            expectTypeOf(task).toEqualTypeOf<string>();
            return task.includes('suite');
          },
        },
      },
    });
    expect(() =>
      definePlanner({
        name: 'unknown-capability',
        model,
        capabilities,
        // @ts-expect-error: the planner has no capability named `flights` (refused when it runs, too)
        approval: { capabilities: { flights: true } },
      }),
    ).toThrow(/not one of its capabilities/);
  });
});
