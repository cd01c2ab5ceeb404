import { APICallError } from '@ai-sdk/provider-v4';
import { aiSdkModel } from '@cairn/ai-sdk';
import { CairnError, defineAgent, defineTool, memoryStore } from '@cairn/sdk';
import { createFakeClock } from '@cairn/testing';
import { MockLanguageModelV4 } from 'ai-v7/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { generateResult, mockProviderV4 } from './mock-provider.js';

// Issue 19: `npm install @ai-sdk/openai` gives the AI SDK 7 line (LanguageModelV4), which was refused.
describe('an AI SDK 7 model (specification v4)', () => {
  it('is accepted as it is typed, and runs an agent with a tool call to its end', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const languageModel: MockLanguageModelV4 = mockProviderV4([
      { toolCalls: [{ id: 'c1', name: 'add', input: '{"a":2,"b":3}' }], input: 20, cached: 5 },
      { text: 'It is 5.', input: 30, output: 4 },
    ]);
    expect(languageModel.specificationVersion).toBe('v4');
    const agent = defineAgent({
      name: 'adder',
      model: aiSdkModel(languageModel),
      tools: [
        defineTool({
          name: 'add',
          description: 'Adds.',
          input: z.object({ a: z.number(), b: z.number() }),
          execute: ({ a, b }) => ({ sum: a + b }),
        }),
      ],
      durable: { store: memoryStore({ clock }), clock },
    });
    const result = await agent.execute('2 + 3?');
    expect(result.output).toBe('It is 5.');
    expect(result.usage).toEqual({
      inputTokens: 50,
      outputTokens: 5,
      totalTokens: 55,
      cachedInputTokens: 5,
    });
    expect(languageModel.doGenerateCalls[1]!.prompt).toEqual([
      { role: 'user', content: [{ type: 'text', text: '2 + 3?' }] },
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'add', input: { a: 2, b: 3 } }],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            toolName: 'add',
            output: { type: 'json', value: { sum: 5 } },
          },
        ],
      },
    ]);
  });

  it.each([
    [429, 2, true],
    [400, 1, false],
  ] as const)(
    'maps its APICallError with HTTP %s: retried when retryable, the detail kept',
    async (statusCode, calls, retryable) => {
      const clock = createFakeClock({ autoAdvance: true });
      let tries = 0;
      const languageModel = new MockLanguageModelV4({
        provider: 'openai.responses',
        modelId: 'gpt-y',
        doGenerate: async () => {
          tries += 1;
          if (tries === 1 || !retryable) {
            throw new APICallError({
              message: 'provider said no',
              url: 'https://api.example/v1/responses',
              requestBodyValues: {},
              statusCode,
              responseHeaders: { 'retry-after-ms': '1200' },
            });
          }
          return generateResult({ text: 'ok' }) as never;
        },
      });
      const agent = defineAgent({
        name: 'asker',
        model: aiSdkModel(languageModel),
        durable: { store: memoryStore({ clock }), clock },
      });
      const outcome = await agent.execute('go').catch((e: unknown) => e);
      expect(languageModel.doGenerateCalls).toHaveLength(calls);
      if (retryable) {
        expect(outcome).toMatchObject({ output: 'ok' });
        return;
      }
      expect(outcome).toBeInstanceOf(CairnError);
      expect(outcome).toMatchObject({
        code: 'MODEL_FAILED',
        data: { provider: 'openai.responses', model: 'gpt-y', statusCode: 400 },
      });
    },
  );
});
