import { scriptedModel } from '@cairn/testing';
import { describe, expect, it } from 'vitest';

const signal = new AbortController().signal;

describe('scriptedModel', () => {
  it('answers by turn, so a repeated request gets the same answer, and records what it was asked', async () => {
    const model = scriptedModel([
      {
        toolCalls: [{ name: 'search', args: { q: 'x' } }],
        usage: { inputTokens: 7, outputTokens: 3 },
      },
      { text: 'final' },
    ]);
    const first = await model.generate({
      messages: [{ role: 'user', content: 'hi' }],
      tools: [],
      signal,
    });
    expect(first.toolCalls).toEqual([{ id: 'call_0_0', name: 'search', args: { q: 'x' } }]);
    expect(first.usage).toEqual({ inputTokens: 7, outputTokens: 3, totalTokens: 10 });
    const again = await model.generate({
      messages: [{ role: 'user', content: 'hi' }],
      tools: [],
      signal,
    });
    expect(again).toEqual(first);
    const second = await model.generate({
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: '', toolCalls: first.toolCalls },
      ],
      tools: [],
      signal,
    });
    expect(second.message.content).toBe('final');
    expect(model.calls).toHaveLength(3);
    expect(model.calls[2]?.messages).toHaveLength(2);
  });

  it('keeps no copy of the requests when recordCalls is false, and answers the same', async () => {
    const model = scriptedModel([{ text: 'hello' }], { recordCalls: false });
    const answer = await model.generate({
      messages: [{ role: 'user', content: 'hi' }],
      tools: [],
      signal,
    });
    expect(answer.message.content).toBe('hello');
    expect(model.calls).toEqual([]);
  });

  it('fails with a typed error when the script runs out', async () => {
    const model = scriptedModel([]);
    await expect(model.generate({ messages: [], tools: [], signal })).rejects.toMatchObject({
      code: 'MODEL_FAILED',
    });
  });
});
