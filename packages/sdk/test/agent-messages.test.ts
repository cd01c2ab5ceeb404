import {
  defineAgent,
  defineTool,
  memoryStore,
  RunWaitingError,
  waitUntilTool,
  type Agent,
  type ModelMessage,
} from '@cairn/sdk';
import { createFakeClock, scriptedModel, type Script } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

function setup(script: Script, onTool?: (agent: Agent<string>) => Promise<void>) {
  const clock = createFakeClock({ autoAdvance: true });
  const store = memoryStore({ clock });
  const model = scriptedModel(script);
  const self: { agent?: Agent<string> } = {};
  const note = defineTool({
    name: 'note',
    description: 'Takes a note.',
    input: z.object({ text: z.string() }),
    execute: async ({ text }) => {
      await onTool?.(self.agent!);
      return { noted: text };
    },
  });
  self.agent = defineAgent({
    name: 'helper',
    model,
    tools: [note, waitUntilTool()],
    maxTrips: 6,
    durable: { store, clock, leaseMs: 10_000 },
  });
  return { clock, store, model, agent: self.agent };
}

const users = (messages: readonly ModelMessage[]) =>
  messages.filter((m) => m.role === 'user').map((m) => (m as { content: string }).content);

describe('messages sent to a running agent', () => {
  it('joins a follow-up sent during a trip to the conversation before the next model call, once', async () => {
    const { agent, model } = setup(
      [
        { toolCalls: [{ id: 'n1', name: 'note', args: { text: 'flight' } }] },
        { text: 'Booked the flight and the hotel.' },
      ],
      (self) => self.followUp('r-1', 'Also book a hotel.').then(() => undefined),
    );
    const result = await agent.execute('Book a flight.', { runId: 'r-1' });
    expect(users(model.calls[1]!.messages)).toEqual(['Book a flight.', 'Also book a hotel.']);
    // After the tool's answer: the conversation stays well formed.
    expect(model.calls[1]!.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'user',
    ]);
    expect(users(result.messages)).toEqual(['Book a flight.', 'Also book a hotel.']);
  });

  it('reads a follow-up that arrived while the model wrote its final answer instead of ending', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const store = memoryStore({ clock });
    let sent = false;
    const model = scriptedModel((request, turn) =>
      turn === 0
        ? { text: 'Here is the flight.' }
        : { text: `Answered ${users(request.messages).length} messages.` },
    );
    const agent = defineAgent({
      name: 'late',
      model: {
        ...model,
        generate: async (request) => {
          if (!sent) {
            sent = true;
            await agent.followUp('r-2', 'And a hotel?');
          }
          return model.generate(request);
        },
      },
      durable: { store, clock },
    });
    const result = await agent.execute('A flight?', { runId: 'r-2' });
    expect(result.output).toBe('Answered 2 messages.');
    expect(result.trips).toBe(2);
    expect(await store.mailbox('r-2')).toEqual([]);
  });

  it('sleeps when the model asks, holding nothing, and continues once the time came', async () => {
    const { agent, clock, store, model } = setup([
      { toolCalls: [{ id: 'w1', name: 'wait_until', args: { seconds: 2 * 24 * 3600 } }] },
      { text: 'Checked again: shipped.' },
    ]);
    const startedAt = clock.now();
    const error = await agent
      .execute('Check the parcel in two days.', { runId: 'r-3' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunWaitingError);
    const { run } = (await store.load('r-3'))!;
    expect(run).toMatchObject({ status: 'waiting', owner: null });
    expect(run.wait?.until).toBe(startedAt + 2 * 24 * 3600 * 1000);
    expect(await store.nextWake([{ kind: 'agent', name: 'helper' }])).toBe(run.wait?.until);
    await clock.advance(24 * 3600 * 1000);
    await expect(agent.resume('r-3')).rejects.toBeInstanceOf(RunWaitingError);
    expect(model.calls).toHaveLength(1);
    await clock.advance(24 * 3600 * 1000);
    const result = await agent.resume('r-3');
    expect(result.output).toBe('Checked again: shipped.');
    const answer = result.messages.find((m) => m.role === 'tool');
    expect(answer).toMatchObject({ content: { wokeAt: new Date(run.wait!.until!).toISOString() } });
  });

  it('is woken from a sleep by a steer message, which it reads before the next model call', async () => {
    const { agent, model } = setup([
      { toolCalls: [{ id: 'w1', name: 'wait_until', args: { seconds: 3600 } }] },
      { text: 'Changed course.' },
    ]);
    await expect(agent.execute('Wait an hour.', { runId: 'r-4' })).rejects.toBeInstanceOf(
      RunWaitingError,
    );
    await agent.steer('r-4', 'Stop waiting, do it now.');
    await expect(agent.resume('r-4')).resolves.toMatchObject({ output: 'Changed course.' });
    const last = model.calls[1]!.messages;
    expect(last.at(-2)).toMatchObject({
      role: 'tool',
      content: { interrupted: expect.any(String) },
    });
    expect(last.at(-1)).toEqual({ role: 'user', content: 'Stop waiting, do it now.' });
  });

  it('does not wait for a steer that arrived before the wait began: it is received at once', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const store = memoryStore({ clock });
    const model = scriptedModel([
      { toolCalls: [{ id: 'w1', name: 'wait_until', args: { seconds: 60 } }] },
      { text: 'done' },
    ]);
    const agent = defineAgent({
      name: 'early',
      model: {
        ...model,
        // The steer lands while the model answers: after the trip boundary, before the wait begins.
        generate: async (request) => {
          if (model.calls.length === 0) await agent.steer('r-5', 'no need to wait');
          return model.generate(request);
        },
      },
      tools: [waitUntilTool()],
      durable: { store, clock },
    });
    await expect(agent.execute('hi', { runId: 'r-5' })).resolves.toMatchObject({ output: 'done' });
    expect(clock.now()).toBeLessThan(Date.UTC(2026, 0, 1) + 60_000);
    expect(users(model.calls[1]!.messages)).toEqual(['hi', 'no need to wait']);
    expect((await store.load('r-5'))?.run.status).toBe('completed');
  });
});
