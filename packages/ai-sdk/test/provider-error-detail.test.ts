import { APICallError } from '@ai-sdk/provider';
import { aiSdkModel } from '@cairn/ai-sdk';
import {
  CairnError,
  defineAgent,
  definePlanner,
  defineTool,
  memoryStore,
  type DurableStore,
} from '@cairn/sdk';
import { createFakeClock } from '@cairn/testing';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

function providerError(statusCode: 400 | 429) {
  return new APICallError({
    message: statusCode === 400 ? 'Invalid schema for function "lookup"' : 'Rate limit reached',
    url: 'https://api.example/v1/chat',
    requestBodyValues: {},
    statusCode,
    responseHeaders: statusCode === 429 ? { 'retry-after-ms': '1500' } : {},
  });
}

function failingModel(statusCode: 400 | 429) {
  return new MockLanguageModelV3({
    provider: 'openai.chat',
    modelId: 'gpt-x',
    doGenerate: async () => {
      throw providerError(statusCode);
    },
  });
}

const echo = defineTool({
  name: 'echo',
  description: 'Echo a value.',
  input: z.object({ value: z.string() }),
  execute: ({ value }) => value,
});

function definitions(statusCode: 400 | 429, store: DurableStore) {
  const clock = createFakeClock({ autoAdvance: true });
  const languageModel = failingModel(statusCode);
  const durable = { store, clock };
  return {
    languageModel,
    agent: defineAgent({ name: 'asker', model: aiSdkModel(languageModel), durable }),
    planner: definePlanner({
      name: 'plans',
      model: aiSdkModel(languageModel),
      capabilities: [{ name: 'echo', description: 'Echo a value.', executable: echo }],
      durable,
    }),
  };
}

const cases = [
  { statusCode: 400 as const, calls: 1, data: { statusCode: 400 }, retryable: false },
  {
    statusCode: 429 as const,
    calls: 3,
    data: { statusCode: 429, retryAfterMs: 1500 },
    retryable: true,
  },
];

describe.each(['agent', 'planner'] as const)('a provider error ending a %s run', (kind) => {
  it.each(cases)(
    'keeps HTTP $statusCode detail in the thrown, stored and resumed MODEL_FAILED',
    async ({ statusCode, calls, data, retryable }) => {
      const store = memoryStore();
      const defs = definitions(statusCode, store);
      const runId = `${kind}-${statusCode}`;
      const definition = defs[kind];
      const expected = {
        code: 'MODEL_FAILED',
        data: { provider: 'openai.chat', model: 'gpt-x', ...data },
      };
      const thrown = await definition.execute('go', { runId }).catch((e: unknown) => e);
      expect(thrown).toBeInstanceOf(CairnError);
      expect(thrown).toMatchObject(expected);
      expect((thrown as Error).message).toContain(`HTTP ${statusCode}`);
      // The provider's own error, as the adapter mapped it, is the cause.
      expect((thrown as Error).cause).toMatchObject({ code: 'MODEL_FAILED', retryable, data });
      expect(defs.languageModel.doGenerateCalls).toHaveLength(calls);

      const stored = (await store.load(runId))?.run.error;
      expect(stored).toMatchObject({ ...expected, cause: { retryable, data } });

      const resumed = await definition.resume(runId).catch((e: unknown) => e);
      expect(resumed).toMatchObject(expected);
      expect((resumed as Error).cause).toMatchObject({ code: 'MODEL_FAILED', retryable, data });
      expect(defs.languageModel.doGenerateCalls).toHaveLength(calls);
    },
  );
});
