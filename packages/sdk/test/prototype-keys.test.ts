import { defineAgent, defineTool, memoryStore, type ModelMessage } from '@cairn/sdk';
import { createFakeClock, scriptedModel, type ScriptedTurn } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { crashAtCheckpointOnce } from './helpers.js';

/** An agent with one `note` tool that records the input it was handed. */
function noteAgent(script: ScriptedTurn[]) {
  const clock = createFakeClock({ autoAdvance: true });
  const store = memoryStore({ clock });
  const inputs: Array<{ toolCallId: string; input: Record<string, unknown> }> = [];
  const model = scriptedModel(script);
  const make = () =>
    defineAgent({
      name: 'notes',
      model,
      tools: [
        defineTool({
          name: 'note',
          description: 'Takes a note.',
          input: z.object({ value: z.string(), admin: z.boolean().optional() }),
          execute: (input, ctx) => {
            inputs.push({ toolCallId: ctx.toolCallId, input });
            return { noted: input.value };
          },
        }),
      ],
      durable: { store, clock, leaseMs: 10_000 },
    });
  return { make, inputs, model, clock };
}

const answers = (messages: readonly ModelMessage[]) =>
  messages.flatMap((m) => (m.role === 'tool' ? [[m.toolCallId, m.content]] : []));

describe('prototype keys the model chooses', () => {
  it('answers calls to tools named __proto__, constructor or toString with TOOL_NOT_FOUND', async () => {
    const names = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'];
    const { make, inputs } = noteAgent([
      { toolCalls: names.map((name, i) => ({ id: `c${i}`, name, args: { value: 'x' } })) },
      { text: 'done' },
    ]);
    const result = await make().execute('go');
    expect(result.output).toBe('done');
    expect(inputs).toEqual([]);
    expect(answers(result.messages).map(([, content]) => content)).toEqual(
      names.map(() => expect.objectContaining({ error: 'TOOL_NOT_FOUND' }) as unknown),
    );
  });

  it('runs calls with ids __proto__ and constructor once each and reuses their results after a crash', async () => {
    const { make, inputs, clock } = noteAgent([
      {
        toolCalls: [
          { id: '__proto__', name: 'note', args: { value: 'p' } },
          { id: 'constructor', name: 'note', args: { value: 'c' } },
        ],
      },
      { text: 'done' },
    ]);
    // Crash once both results are journaled, before the checkpoint that would record them.
    await crashAtCheckpointOnce(make(), 'proto-ids', () => inputs.length === 2);
    await clock.advance(10_001);
    const result = await make().resume('proto-ids');
    expect(result.output).toBe('done');
    expect(inputs.map((i) => i.toolCallId)).toEqual(['__proto__', 'constructor']);
    expect(answers(result.messages)).toEqual([
      ['__proto__', { noted: 'p' }],
      ['constructor', { noted: 'c' }],
    ]);
  });

  it('hands a tool nothing the model hid under a __proto__ key of its arguments, and keeps the key', async () => {
    // As a provider's JSON arrives: `__proto__` an own key. A NUL elsewhere makes the runtime clean the strings.
    const args = JSON.parse('{"__proto__":{"admin":true},"value":"x\\u0000y"}') as never;
    const { make, inputs } = noteAgent([
      { toolCalls: [{ id: 'c1', name: 'note', args }] },
      { text: 'done' },
    ]);
    const result = await make().execute('go');
    expect(inputs).toEqual([{ toolCallId: 'c1', input: { value: 'x\ufffdy' } }]);
    const assistant = result.messages.find((m) => m.role === 'assistant');
    const stored = assistant?.role === 'assistant' ? assistant.toolCalls?.[0]?.args : undefined;
    expect(Object.getPrototypeOf(stored)).toBe(Object.prototype);
    expect(JSON.stringify(stored)).toBe('{"__proto__":{"admin":true},"value":"x\ufffdy"}');
  });
});
