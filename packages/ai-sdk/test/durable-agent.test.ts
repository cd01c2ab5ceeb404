import { APICallError } from '@ai-sdk/provider';
import { aiSdkModel } from '@cairn/ai-sdk';
import {
  CairnError,
  defineAgent,
  defineTool,
  memoryStore,
  type AgentResult,
  type Boundary,
  type Clock,
  type DurableStore,
} from '@cairn/sdk';
import { createFakeClock, exploreCrashes, observeAgent, SimulatedCrash } from '@cairn/testing';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  generateResult,
  mockProvider,
  specs,
  tripOf,
  type Spec,
  type Turn,
} from './mock-provider.js';

const order = z.object({ orderId: z.string(), charged: z.number() });

// Trip 0 looks an item up (idempotent), trip 1 charges (a side effect), trip 2 answers with JSON.
const orderTurns: Turn[] = [
  {
    text: 'Looking it up.',
    toolCalls: [
      { id: 'lookup-1', name: 'lookup', input: '{"sku":"A","options":{"gift":true,"tags":["x"]}}' },
    ],
    input: 120,
    cached: 100,
    output: 12,
  },
  {
    toolCalls: [{ id: 'charge-1', name: 'charge', input: '{"cents":4200}' }],
    input: 160,
    cached: 120,
    output: 8,
  },
  { text: '{"orderId":"o-1","charged":4200}', input: 200, output: 15 },
];

function orderWorld(spec: Spec = 'v3') {
  const sideEffects: Record<string, number> = {};
  const received: Record<string, unknown> = {};
  const record = (id: string, args: unknown) => {
    sideEffects[id] = (sideEffects[id] ?? 0) + 1;
    received[id] = args;
  };
  const languageModel = mockProvider(orderTurns, 'mock-model', spec);
  const tools = [
    defineTool({
      name: 'lookup',
      description: 'Look up a product.',
      input: z.object({
        sku: z.string(),
        options: z.object({ gift: z.boolean(), tags: z.array(z.string()) }),
      }),
      idempotent: true,
      execute: (args, ctx) => {
        record(ctx.toolCallId, args);
        return { sku: args.sku, price: 4200 };
      },
    }),
    defineTool({
      name: 'charge',
      description: 'Charge the card.',
      input: z.object({ cents: z.number().int() }),
      execute: (args, ctx) => {
        record(ctx.toolCallId, args);
        return { charged: args.cents };
      },
    }),
  ];
  const create = (store: DurableStore, clock: Clock) =>
    defineAgent({
      name: 'orders',
      model: aiSdkModel(languageModel),
      tools,
      system: 'You place orders.',
      maxTrips: 5,
      output: order,
      durable: { store, clock, leaseMs: 30_000 },
    });
  return { sideEffects, received, languageModel, create };
}

const expectedUsage = {
  inputTokens: 480,
  outputTokens: 35,
  totalTokens: 515,
  cachedInputTokens: 220,
};

describe('a durable agent on an AI SDK model', () => {
  it.each(specs)(
    'round-trips tool-call arguments and results, counts usage with cached tokens (%s)',
    async (spec) => {
      const clock = createFakeClock({ autoAdvance: true });
      const store = memoryStore({ clock });
      const world = orderWorld(spec);
      const agent = world.create(store, clock);
      expect(agent.signature).toBe(world.create(store, clock).signature);

      const result = await agent.execute('Order A as a gift.', { runId: 'order-1' });

      expect(result.output).toEqual({ orderId: 'o-1', charged: 4200 });
      expect(result.usage).toEqual(expectedUsage);
      // The tool got exactly the arguments the provider encoded.
      expect(world.received).toEqual({
        'lookup-1': { sku: 'A', options: { gift: true, tags: ['x'] } },
        'charge-1': { cents: 4200 },
      });

      const calls = world.languageModel.doGenerateCalls;
      expect(calls).toHaveLength(3);
      const first = calls[0]!;
      expect(first.prompt).toEqual([
        { role: 'system', content: 'You place orders.' },
        { role: 'user', content: [{ type: 'text', text: 'Order A as a gift.' }] },
      ]);
      expect(first.tools?.map((tool) => tool.name)).toEqual(['lookup', 'charge']);
      expect(first.tools?.[1]).toMatchObject({
        type: 'function',
        description: 'Charge the card.',
        inputSchema: { type: 'object', properties: { cents: { type: 'integer' } } },
      });
      expect(first.abortSignal).toBeInstanceOf(AbortSignal);
      // The second call sees the first call's tool call, with its arguments as an object, and its result.
      expect(calls[1]!.prompt.slice(2)).toEqual([
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Looking it up.' },
            {
              type: 'tool-call',
              toolCallId: 'lookup-1',
              toolName: 'lookup',
              input: { sku: 'A', options: { gift: true, tags: ['x'] } },
            },
          ],
        },
        {
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: 'lookup-1',
              toolName: 'lookup',
              output: { type: 'json', value: { sku: 'A', price: 4200 } },
            },
          ],
        },
      ]);

      // What the run kept went through the store as JSON, and a new process continues from it.
      const stored = await store.load('order-1');
      expect(stored?.run.status).toBe('completed');
      const again = await world.create(store, clock).resume('order-1');
      expect(again.output).toEqual(result.output);
      expect(again.messages).toEqual(JSON.parse(JSON.stringify(result.messages)));
      expect(calls).toHaveLength(3);
    },
  );

  it('asks for structured output with the JSON Schema of the output schema', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const languageModel = mockProvider([{ text: '{"city":"Paris","celsius":18}' }]);
    const agent = defineAgent({
      name: 'weather',
      model: aiSdkModel(languageModel),
      output: z.object({ city: z.string(), celsius: z.number() }),
      durable: { store: memoryStore({ clock }), clock },
    });
    const result = await agent.execute('Weather in Paris?');
    expect(result.output).toEqual({ city: 'Paris', celsius: 18 });
    const call = languageModel.doGenerateCalls[0]!;
    expect(call.responseFormat).toMatchObject({
      type: 'json',
      schema: {
        type: 'object',
        properties: { city: { type: 'string' }, celsius: { type: 'number' } },
        required: ['city', 'celsius'],
      },
    });
    expect(call.tools).toBeUndefined();
  });

  it('answers unparseable tool input as invalid arguments and goes on', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    let ran = 0;
    const languageModel = mockProvider([
      { toolCalls: [{ id: 'c1', name: 'echo', input: '{"text": "unterminated' }] },
      { text: 'Sorry, my arguments were broken.' },
    ]);
    const agent = defineAgent({
      name: 'echo',
      model: aiSdkModel(languageModel),
      tools: [
        defineTool({
          name: 'echo',
          description: 'Echo text.',
          input: z.object({ text: z.string() }),
          execute: ({ text }) => {
            ran += 1;
            return text;
          },
        }),
      ],
      durable: { store: memoryStore({ clock }), clock },
    });
    const result = await agent.execute('Echo something.');
    expect(result.output).toBe('Sorry, my arguments were broken.');
    expect(ran).toBe(0);
    expect(result.messages[2]).toMatchObject({
      role: 'tool',
      toolCallId: 'c1',
      isError: true,
      content: { error: 'TOOL_INPUT_INVALID' },
    });
    // The model sees its call as `{}` (what providers accept) and its raw input quoted in the error.
    expect(languageModel.doGenerateCalls[1]!.prompt.slice(1)).toMatchObject([
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', input: {} }] },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            output: {
              type: 'error-json',
              value: { error: 'TOOL_INPUT_INVALID', input: '{"text": "unterminated' },
            },
          },
        ],
      },
    ]);
  });
});

describe('provider errors', () => {
  function rateLimited(headers: Record<string, string>) {
    return new APICallError({
      message: 'Rate limit reached',
      url: 'https://api.example/v1/chat',
      requestBodyValues: {},
      statusCode: 429,
      responseHeaders: headers,
    });
  }

  it.each([
    ['retry-after', { 'retry-after': '7' }, 7_000],
    ['retry-after-ms', { 'retry-after-ms': '2500' }, 2_500],
  ])(
    'retries a rate limit after the %s the provider asked for, on the runtime clock',
    async (_, headers, waitMs) => {
      const clock = createFakeClock({ autoAdvance: true });
      const calledAt: number[] = [];
      const languageModel = new MockLanguageModelV3({
        doGenerate: async () => {
          calledAt.push(clock.now());
          if (calledAt.length === 1) throw rateLimited(headers);
          return generateResult({ text: 'done', input: 5, output: 2 });
        },
      });
      const agent = defineAgent({
        name: 'patient',
        model: aiSdkModel(languageModel),
        durable: { store: memoryStore({ clock }), clock },
      });
      const result = await agent.execute('go');
      expect(result.output).toBe('done');
      expect(result.usage).toEqual({ inputTokens: 5, outputTokens: 2, totalTokens: 7 });
      expect(calledAt).toHaveLength(2);
      // Fake time moved by exactly the wait the provider asked for, not by the runtime's own backoff.
      expect(calledAt[1]! - calledAt[0]!).toBe(waitMs);
    },
  );

  it('ends the run as failed with MODEL_FAILED on an invalid request, without retrying', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const store = memoryStore({ clock });
    const languageModel = new MockLanguageModelV3({
      provider: 'openai.chat',
      modelId: 'gpt-x',
      doGenerate: async () => {
        throw new APICallError({
          message: 'Incorrect API key provided',
          url: 'https://api.example/v1/chat',
          requestBodyValues: {},
          statusCode: 401,
        });
      },
    });
    const agent = defineAgent({
      name: 'doomed',
      model: aiSdkModel(languageModel),
      durable: { store, clock },
    });
    const error = await agent.execute('go', { runId: 'doomed-1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CairnError);
    expect(error).toMatchObject({ code: 'MODEL_FAILED', retryable: false });
    expect((error as Error).message).toContain('HTTP 401');
    expect((error as Error).message).toContain('Incorrect API key provided');
    expect(languageModel.doGenerateCalls).toHaveLength(1);
    const stored = await store.load('doomed-1');
    expect(stored?.run.status).toBe('failed');
    expect(stored?.run.error?.code).toBe('MODEL_FAILED');
    await expect(agent.resume('doomed-1')).rejects.toMatchObject({ code: 'MODEL_FAILED' });
    expect(languageModel.doGenerateCalls).toHaveLength(1);
  });

  it('passes the abort signal through: cancelling the run aborts the provider call', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const controller = new AbortController();
    const languageModel = new MockLanguageModelV3({
      doGenerate: (options) =>
        new Promise((_, reject) => {
          options.abortSignal?.addEventListener('abort', () => reject(new Error('aborted')));
          controller.abort(new Error('user cancelled'));
        }),
    });
    const agent = defineAgent({
      name: 'cancelled',
      model: aiSdkModel(languageModel),
      durable: { store: memoryStore({ clock }), clock },
    });
    await expect(agent.execute('go', { signal: controller.signal })).rejects.toMatchObject({
      code: 'RUN_CANCELLED',
    });
    expect(languageModel.doGenerateCalls[0]!.abortSignal?.aborted).toBe(true);
  });
});

describe('crashes', () => {
  it.each(specs)(
    'never requests a settled model call again and counts usage once, at every boundary (%s)',
    async (spec) => {
      interface Attempted {
        trips: number[];
        attemptStarts: number[];
      }
      const worlds: Attempted[] = [];
      const report = await exploreCrashes<string, AgentResult<unknown>>({
        input: 'Order A as a gift.',
        setup() {
          const world = orderWorld(spec);
          const attempted: Attempted = { trips: [], attemptStarts: [] };
          worlds.push(attempted);
          const { doGenerate } = world.languageModel;
          world.languageModel.doGenerate = (options) => {
            attempted.trips.push(tripOf(options));
            return doGenerate(options);
          };
          return {
            create: (store, clock) => {
              attempted.attemptStarts.push(attempted.trips.length);
              return world.create(store, clock);
            },
            sideEffects: () => world.sideEffects,
            modelCalls: () => world.languageModel.doGenerateCalls.length,
          };
        },
        observe: observeAgent,
        idempotent: (key) => key.startsWith('lookup'),
      });

      expect(report.violations).toEqual([]);
      expect(report.boundaries).toBeGreaterThanOrEqual(10);
      expect(report.cases.every((c) => c.violations.length === 0)).toBe(true);

      const [baseline, ...cases] = worlds;
      expect(baseline!.trips).toEqual([0, 1, 2]);
      let reRequested = 0;
      for (const [index, world] of cases.entries()) {
        const crashedAt = world.attemptStarts[1] ?? world.trips.length;
        const beforeCrash = world.trips.slice(0, crashedAt);
        const afterCrash = world.trips.slice(crashedAt);
        const again = afterCrash.filter((trip) => beforeCrash.includes(trip));
        // Only the last response before the crash can be unsettled; everything earlier is journaled.
        const where = `case ${index} at ${report.cases[index]?.boundary.point ?? '?'}`;
        expect(again.length, where).toBeLessThanOrEqual(1);
        if (again.length === 1) expect(again[0], where).toBe(beforeCrash.at(-1));
        expect(new Set(afterCrash).size, where).toBe(afterCrash.length);
        reRequested += again.length;
      }
      expect(report.cases).toHaveLength(cases.length);
      // Both kinds of case occurred: crashes before a response settled, and crashes after.
      expect(reRequested).toBeGreaterThan(0);
      expect(reRequested).toBeLessThan(cases.length);
    },
  );

  it('resumes on a new process after a checkpoint without asking the model again', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const store = memoryStore({ clock });
    const world = orderWorld();
    let checkpoints = 0;
    const crash = (boundary: Boundary) => {
      // The second checkpoint follows trip 0's model response and its tool call.
      if (boundary.point === 'checkpoint.after' && ++checkpoints === 2) {
        throw new SimulatedCrash(boundary);
      }
    };
    await expect(
      world.create(store, clock).execute('Order A as a gift.', { runId: 'r', onBoundary: crash }),
    ).rejects.toBeInstanceOf(SimulatedCrash);
    expect(world.languageModel.doGenerateCalls).toHaveLength(1);

    await clock.advance(30_001);
    const result = await world.create(store, clock).resume('r');
    expect(result.output).toEqual({ orderId: 'o-1', charged: 4200 });
    expect(result.usage).toEqual(expectedUsage);
    expect(world.languageModel.doGenerateCalls.map(tripOf)).toEqual([0, 1, 2]);
    expect(world.sideEffects).toEqual({ 'lookup-1': 1, 'charge-1': 1 });
  });
});
