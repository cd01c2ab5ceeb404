// Runs in a fresh npm project against the packed tarballs (see ../pack-check.mjs): every package imports
// by its name, its types check under NodeNext, and a short agent runs on the memory store.
import assert from 'node:assert/strict';
import type { LanguageModelV3, LanguageModelV3GenerateResult } from '@ai-sdk/provider';
import { aiSdkModel } from '@cairn/ai-sdk';
import {
  CairnError,
  defineAgent,
  defineTool,
  isCairnError,
  memoryStore,
  type AgentResult,
  type DurableStore,
} from '@cairn/sdk';
import { migrationSql, pgStore } from '@cairn/store-pg';
import { createFakeClock, scriptedModel } from '@cairn/testing';
import { createClient, createWorker, type WorkerEvent } from '@cairn/worker';
import { z } from 'zod';

const calls: number[] = [];
const add = defineTool({
  name: 'add',
  description: 'Adds two numbers.',
  input: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }) => {
    calls.push(a + b);
    return { sum: a + b };
  },
});
const adder = (store: DurableStore) =>
  defineAgent({
    name: 'adder',
    model: scriptedModel([
      { toolCalls: [{ id: 'c1', name: 'add', args: { a: 2, b: 3 } }] },
      { text: '{"answer":5}' },
    ]),
    tools: [add],
    output: z.object({ answer: z.number() }),
    durable: { store },
  });

// An agent run in process, then resumed: the settled tool call never runs again.
const agent = adder(memoryStore());
const result: AgentResult<{ answer: number }> = await agent.execute('2 + 3?', { runId: 'smoke-1' });
assert.deepEqual(result.output, { answer: 5 });
assert.deepEqual(await agent.resume('smoke-1'), { ...result, resumed: true });
assert.deepEqual(calls, [5]);
console.log('@cairn/sdk + @cairn/testing: agent ran and resumed');

// The same agent performed by a worker, started through a client.
const store = memoryStore();
const events: WorkerEvent['type'][] = [];
const worker = createWorker({
  store,
  agents: [adder(store)],
  pollMs: 20,
  shutdownSignals: [],
  onEvent: (event) => events.push(event.type),
});
await worker.start();
const client = createClient({ store });
const { runId } = await client.start(adder(store), '2 + 3?');
assert.deepEqual(await client.result(runId, { pollMs: 20, timeoutMs: 10_000 }), { answer: 5 });
await worker.close();
assert.deepEqual(
  events.filter((type) => type !== 'error'),
  ['started', 'claimed', 'completed', 'closed'],
);
console.log('@cairn/worker: a worker performed a run a client started');

// store-pg reads its migrations from the shipped sql/ folder; no database needed for that.
assert.match(migrationSql({ schema: 'cairn' }), /create table/i);
assert.equal(typeof pgStore, 'function');
console.log('@cairn/store-pg: migrations shipped');

// ai-sdk adapts a LanguageModelV3 of the user's own @ai-sdk/provider.
const generated: LanguageModelV3GenerateResult = {
  content: [{ type: 'text', text: 'hello' }],
  finishReason: { unified: 'stop', raw: 'stop' },
  usage: {
    inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 1, text: 1, reasoning: undefined },
  },
  warnings: [],
};
const languageModel: LanguageModelV3 = {
  specificationVersion: 'v3',
  provider: 'fake',
  modelId: 'fake-1',
  supportedUrls: {},
  doGenerate: async () => generated,
  doStream: () => Promise.reject(new Error('no streaming here')),
};
const model = aiSdkModel(languageModel);
const answer = await model.generate({
  messages: [{ role: 'user', content: 'hi' }],
  tools: [],
  signal: new AbortController().signal,
});
assert.equal(answer.message.content, 'hello');
assert.equal(answer.usage.inputTokens, 3);
console.log('@cairn/ai-sdk: a LanguageModelV3 answered');

// Errors are branded across packages; the fake clock only moves when told.
assert.ok(isCairnError(new CairnError('INVALID_ARGUMENT', 'x')));
const clock = createFakeClock({ now: 1_000 });
await clock.advance(500);
assert.equal(clock.now(), 1_500);
console.log('@cairn/testing: fake clock');
