import {
  defineAgent,
  defineTool,
  foldStream,
  memoryStore,
  type AgentResult,
  type DurableStore,
} from '@cairn/sdk';
import { exploreCrashes, observeAgent, scriptedModel, type ScriptedTurn } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

// Three trips of two tool calls each (one idempotent lookup, one charge with a side effect), then an answer.
const script: ScriptedTurn[] = [
  {
    text: 'Looking up the order and reserving stock.',
    toolCalls: [
      { id: 'lookup-1', name: 'lookup', args: { sku: 'A' } },
      { id: 'reserve-1', name: 'reserve', args: { sku: 'A', qty: 2 } },
    ],
    usage: { inputTokens: 11, outputTokens: 3 },
  },
  {
    toolCalls: [
      { id: 'lookup-2', name: 'lookup', args: { sku: 'B' } },
      { id: 'reserve-2', name: 'reserve', args: { sku: 'B', qty: 1 } },
    ],
    usage: { inputTokens: 13, outputTokens: 5 },
  },
  {
    toolCalls: [
      { id: 'charge-1', name: 'charge', args: { cents: 4200 } },
      { id: 'lookup-3', name: 'lookup', args: { sku: 'C' } },
    ],
    usage: { inputTokens: 17, outputTokens: 7, cachedInputTokens: 4 },
  },
  { text: '{"orderId":"o-1","charged":4200}', usage: { inputTokens: 19, outputTokens: 11 } },
];

function orderWorld(streamPieces?: number) {
  const sideEffects: Record<string, number> = {};
  const record = (id: string) => {
    sideEffects[id] = (sideEffects[id] ?? 0) + 1;
  };
  const model = scriptedModel(script, streamPieces === undefined ? {} : { streamPieces });
  const tools = [
    defineTool({
      name: 'lookup',
      description: 'Look up a product.',
      input: z.object({ sku: z.string() }),
      idempotent: true,
      execute: async ({ sku }, ctx) => {
        record(ctx.toolCallId);
        return { sku, price: 2100 };
      },
    }),
    defineTool({
      name: 'reserve',
      description: 'Reserve stock.',
      input: z.object({ sku: z.string(), qty: z.number().int() }),
      execute: async ({ sku, qty }, ctx) => {
        record(ctx.toolCallId);
        return { reserved: qty, sku, key: ctx.idempotencyKey };
      },
    }),
    defineTool({
      name: 'charge',
      description: 'Charge the card.',
      input: z.object({ cents: z.number().int() }),
      execute: async ({ cents }, ctx) => {
        record(ctx.toolCallId);
        return { charged: cents };
      },
    }),
  ];
  return { sideEffects, model, tools };
}

describe('crash at every boundary of an agent', () => {
  it('resumes with the same result, each settled tool once, usage once, unknown only in flight', async () => {
    const report = await exploreCrashes<string, AgentResult<unknown>>({
      input: 'Order two of A and one of B, then charge.',
      setup() {
        const world = orderWorld();
        return {
          create: (store, clock) =>
            defineAgent({
              name: 'orders',
              model: world.model,
              tools: world.tools,
              system: 'You place orders.',
              maxTrips: 6,
              output: z.object({ orderId: z.string(), charged: z.number() }),
              durable: { store, clock, leaseMs: 30_000 },
            }),
          sideEffects: () => world.sideEffects,
          modelCalls: () => world.model.calls.length,
        };
      },
      observe: observeAgent,
      idempotent: (key) => key.startsWith('lookup'),
    });

    console.log(
      `agent crash exploration: ${report.boundaries} boundaries covered ` +
        `(${Object.entries(report.byPoint)
          .map(([point, n]) => `${point}: ${n}`)
          .join(', ')})`,
    );
    expect(report.violations).toEqual([]);
    expect(report.boundaries).toBeGreaterThanOrEqual(30);
    // Every tool start is a boundary: the non-idempotent calls in flight were reported unknown somewhere.
    const reportedUnknown = new Set(report.cases.flatMap((c) => c.unknown));
    expect([...reportedUnknown].sort()).toEqual(['charge-1', 'reserve-1', 'reserve-2']);
    // An idempotent lookup in flight is re-run, never reported unknown.
    expect([...reportedUnknown].some((key) => key.startsWith('lookup'))).toBe(false);
  });
});

describe('crash at every boundary of an agent that streams', () => {
  it('leaves a stream that folds to what the model said, positions 1, 2, ... and nothing after a crash', async () => {
    const stores: DurableStore[] = [];
    const report = await exploreCrashes<string, AgentResult<unknown>>({
      input: 'Order two of A and one of B, then charge.',
      store: (clock) => {
        const store = memoryStore({ clock });
        stores.push(store);
        return store;
      },
      setup() {
        const world = orderWorld(4);
        return {
          create: (store, clock) =>
            defineAgent({
              name: 'orders',
              model: world.model,
              tools: world.tools,
              maxTrips: 6,
              output: z.object({ orderId: z.string(), charged: z.number() }),
              // Held to the end of each call: every call's chunks ride with the write journaling it.
              durable: {
                store,
                clock,
                leaseMs: 30_000,
                stream: { coalesceChars: 10_000, coalesceMs: 60_000 },
              },
            }),
          sideEffects: () => world.sideEffects,
        };
      },
      observe: observeAgent,
      idempotent: (key) => key.startsWith('lookup'),
    });
    // The harness's late-write check covers stream appends too: a crashed attempt appended nothing after.
    expect(report.violations).toEqual([]);
    const said = script.map((turn) => turn.text ?? '').join('');
    expect(stores.length).toBeGreaterThan(30);
    for (const store of stores) {
      const chunks = await store.readStream!('crash-harness-run', { limit: 10_000 });
      expect(chunks.map((chunk) => chunk.position)).toEqual(chunks.map((_, i) => i + 1));
      expect(foldStream(chunks).text).toBe(said);
    }
  });
});
