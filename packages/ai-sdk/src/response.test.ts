import type { LanguageModelV3GenerateResult, LanguageModelV3Usage } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { fromResult, fromUsage, parseInput } from './response.js';

const usage = (input: Partial<LanguageModelV3Usage['inputTokens']>, output?: number) => ({
  inputTokens: {
    total: undefined,
    noCache: undefined,
    cacheRead: undefined,
    cacheWrite: undefined,
    ...input,
  },
  outputTokens: { total: output, text: undefined, reasoning: undefined },
});

describe('fromResult', () => {
  it('joins text, parses tool inputs, skips provider-executed calls and keeps the unified finish reason', () => {
    const result: LanguageModelV3GenerateResult = {
      content: [
        { type: 'reasoning', text: 'hmm' },
        { type: 'text', text: 'Two ' },
        { type: 'text', text: 'calls.' },
        { type: 'tool-call', toolCallId: 'a', toolName: 'f', input: '{"x":[1,{"y":null}]}' },
        {
          type: 'tool-call',
          toolCallId: 'b',
          toolName: 'web',
          input: '{}',
          providerExecuted: true,
        },
      ],
      finishReason: { unified: 'tool-calls', raw: 'tool_use' },
      usage: usage({ total: 12 }, 3),
      warnings: [],
    };
    const response = fromResult(result);
    expect(response).toEqual({
      message: { role: 'assistant', content: 'Two calls.' },
      toolCalls: [{ id: 'a', name: 'f', args: { x: [1, { y: null }] } }],
      usage: { inputTokens: 12, outputTokens: 3, totalTokens: 15 },
      finishReason: 'tool-calls',
    });
    expect(JSON.parse(JSON.stringify(response))).toEqual(response);
  });
});

describe('parseInput', () => {
  it('reads JSON, treats empty input as no arguments and keeps unparseable input as its raw string', () => {
    expect(parseInput('{"a":1}')).toEqual({ a: 1 });
    expect(parseInput('  ')).toEqual({});
    expect(parseInput('{"a":')).toBe('{"a":');
  });
});

describe('fromUsage', () => {
  it('reports cached input tokens when the provider does', () => {
    expect(fromUsage(usage({ total: 100, noCache: 60, cacheRead: 40 }, 7))).toEqual({
      inputTokens: 100,
      outputTokens: 7,
      totalTokens: 107,
      cachedInputTokens: 40,
    });
  });

  it('adds up the parts when the total is missing, and counts nothing unreported', () => {
    expect(fromUsage(usage({ noCache: 5, cacheRead: 2 }))).toEqual({
      inputTokens: 7,
      outputTokens: 0,
      totalTokens: 7,
      cachedInputTokens: 2,
    });
    expect(fromUsage(usage({}))).toEqual({ inputTokens: 0, outputTokens: 0, totalTokens: 0 });
  });
});
