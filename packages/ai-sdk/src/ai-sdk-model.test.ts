import type { LanguageModelV3 } from '@ai-sdk/provider';
import { isCairnError, type ModelRequest } from '@cairn/sdk';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { aiSdkModel } from './ai-sdk-model.js';

const request = (signal = new AbortController().signal): ModelRequest => ({
  messages: [{ role: 'user', content: 'hi' }],
  tools: [],
  signal,
});

const answer = {
  content: [{ type: 'text' as const, text: 'hello' }],
  finishReason: { unified: 'stop' as const, raw: 'stop' },
  usage: {
    inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 1, text: 1, reasoning: undefined },
  },
  warnings: [],
};

describe('aiSdkModel', () => {
  it('is named after the model id and provider and sends its settings with every call', async () => {
    const languageModel = new MockLanguageModelV3({
      provider: 'anthropic.messages',
      modelId: 'claude-x',
      doGenerate: answer,
    });
    const model = aiSdkModel(languageModel, {
      settings: { temperature: 0, maxOutputTokens: 64 },
    });
    expect(model).toMatchObject({ name: 'claude-x', provider: 'anthropic.messages' });
    expect(await model.generate(request())).toEqual({
      message: { role: 'assistant', content: 'hello' },
      toolCalls: [],
      usage: { inputTokens: 3, outputTokens: 1, totalTokens: 4 },
      finishReason: 'stop',
    });
    expect(languageModel.doGenerateCalls[0]).toMatchObject({ temperature: 0, maxOutputTokens: 64 });
    expect(languageModel.doGenerateCalls[0]?.responseFormat).toBeUndefined();
  });

  it('refuses a model of another specification version', () => {
    const v2 = { specificationVersion: 'v2', provider: 'p', modelId: 'm' };
    expect(() => aiSdkModel(v2 as unknown as LanguageModelV3)).toThrow(/specification v3/);
  });

  it('lets the error of an aborted call through as it is, for the runtime to read', async () => {
    const controller = new AbortController();
    const reason = new Error('lease lost');
    const languageModel = new MockLanguageModelV3({
      doGenerate: async () => {
        controller.abort(reason);
        throw reason;
      },
    });
    const error = await aiSdkModel(languageModel)
      .generate(request(controller.signal))
      .catch((e: unknown) => e);
    expect(error).toBe(reason);
    expect(isCairnError(error)).toBe(false);
  });
});
