import type { ModelMessage } from '@cairn/sdk';
import { outcomeUnknownResult } from '@cairn/sdk';
import { describe, expect, it } from 'vitest';
import { toPrompt, toTools } from './prompt.js';

describe('toPrompt', () => {
  it('maps every role and groups the answers to one assistant message into one tool message', () => {
    const messages: ModelMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: 'Looking.',
        toolCalls: [
          { id: 'c1', name: 'weather', args: { city: 'Paris' } },
          { id: 'c2', name: 'weather', args: { city: 'Rome' } },
        ],
      },
      { role: 'tool', toolCallId: 'c1', toolName: 'weather', content: { celsius: 18 } },
      { role: 'tool', toolCallId: 'c2', toolName: 'weather', content: 'sunny' },
      { role: 'assistant', content: 'Paris 18°C, Rome sunny.' },
    ];
    expect(toPrompt(messages)).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris and Rome?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Looking.' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'weather', input: { city: 'Paris' } },
          { type: 'tool-call', toolCallId: 'c2', toolName: 'weather', input: { city: 'Rome' } },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            toolName: 'weather',
            output: { type: 'json', value: { celsius: 18 } },
          },
          {
            type: 'tool-result',
            toolCallId: 'c2',
            toolName: 'weather',
            output: { type: 'text', value: 'sunny' },
          },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'Paris 18°C, Rome sunny.' }] },
    ]);
  });

  it('sends failed and outcome-unknown tool results as error results', () => {
    const prompt = toPrompt([
      {
        role: 'assistant',
        content: '',
        toolCalls: [
          { id: 'c1', name: 'charge', args: { cents: 1 } },
          { id: 'c2', name: 'charge', args: { cents: 2 } },
        ],
      },
      {
        role: 'tool',
        toolCallId: 'c1',
        toolName: 'charge',
        content: { error: 'TOOL_FAILED', message: 'card declined' },
        isError: true,
        outcome: 'error',
      },
      {
        role: 'tool',
        toolCallId: 'c2',
        toolName: 'charge',
        content: outcomeUnknownResult,
        isError: true,
        outcome: 'unknown',
      },
    ]);
    // No empty text part before the tool calls.
    expect(prompt[0]).toMatchObject({ content: [{ type: 'tool-call' }, { type: 'tool-call' }] });
    expect(prompt[1]).toMatchObject({
      role: 'tool',
      content: [
        { output: { type: 'error-json', value: { message: 'card declined' } } },
        { output: { type: 'error-json', value: outcomeUnknownResult } },
      ],
    });
  });

  it('sends arguments that were not a JSON object as {} and quotes them in the error result', () => {
    const prompt = toPrompt([
      { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'f', args: '{"a":' }] },
      {
        role: 'tool',
        toolCallId: 'c1',
        toolName: 'f',
        content: { error: 'TOOL_INPUT_INVALID', message: 'expected object' },
        isError: true,
        outcome: 'error',
      },
    ]);
    expect(prompt).toEqual([
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'f', input: {} }],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            toolName: 'f',
            output: {
              type: 'error-json',
              value: { error: 'TOOL_INPUT_INVALID', message: 'expected object', input: '{"a":' },
            },
          },
        ],
      },
    ]);
  });
});

describe('toTools', () => {
  it('makes function tools with the JSON Schema as given', () => {
    const inputSchema = { type: 'object', properties: { city: { type: 'string' } } };
    expect(toTools([{ name: 'weather', description: 'Weather now.', inputSchema }])).toEqual([
      { type: 'function', name: 'weather', description: 'Weather now.', inputSchema },
    ]);
  });
});
