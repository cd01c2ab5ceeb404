import {
  defineAgent,
  defineTool,
  memoryStore,
  type Checkpoint,
  type DurableStore,
  type ModelMessage,
} from '@cairn/sdk';
import { createFakeClock, scriptedModel } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { interceptWrites } from './interleave.js';

// Signals that land while a checkpoint is on its way: accepted by the store, so each must reach the run once
// (invariant 15), and a run nobody signals must not pay a mailbox read per trip for the chance.

const users = (messages: readonly ModelMessage[]) =>
  messages.filter((m) => m.role === 'user').map((m) => (m as { content: string }).content);

/** A store that counts mailbox reads. */
function countingMailbox(store: DurableStore): { store: DurableStore; reads: () => number } {
  let reads = 0;
  return {
    store: {
      ...store,
      mailbox: (runId) => {
        reads += 1;
        return store.mailbox(runId);
      },
    },
    reads: () => reads,
  };
}

describe('a signal racing a checkpoint', () => {
  it('accepted while the completing checkpoint is on its way is answered before the run ends', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const memory = memoryStore({ clock });
    let sent = false;
    const store = interceptWrites(memory, async (kind, args) => {
      const checkpoint = args[1] as Checkpoint;
      if (kind !== 'save' || checkpoint.status !== 'completed' || sent) return;
      // The checkpoint left the runtime; the follow-up reaches the store first.
      sent = true;
      await memory.signal('race-1', {
        name: 'cairn.follow-up',
        payload: { content: 'And a hotel?' },
      });
    });
    const model = scriptedModel((request, turn) =>
      turn === 0
        ? { text: 'Here is the flight.' }
        : { text: `Answered ${users(request.messages).length} messages.` },
    );
    const agent = defineAgent({ name: 'racer', model, durable: { store, clock } });

    const result = await agent.execute('A flight?', { runId: 'race-1' });

    expect(sent).toBe(true);
    expect(result.output).toBe('Answered 2 messages.');
    expect(users(model.calls[1]!.messages)).toEqual(['A flight?', 'And a hotel?']);
    expect(await memory.mailbox('race-1')).toEqual([]);
    expect((await memory.load('race-1'))!.run).toMatchObject({
      status: 'completed',
      output: 'Answered 2 messages.',
    });
  });

  it('a completing checkpoint refused for unread mail keeps the lease and writes nothing', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const memory = memoryStore({ clock });
    const answers: Array<{ written: boolean; mail: boolean }> = [];
    const base = interceptWrites(memory, async (kind, args) => {
      const checkpoint = args[1] as Checkpoint;
      if (kind !== 'save' || checkpoint.status !== 'completed' || answers.length > 0) return;
      await memory.signal('race-2', { name: 'cairn.follow-up', payload: { content: 'More?' } });
    });
    const store: DurableStore = {
      ...base,
      save: async (fence, checkpoint) => {
        const receipt = await base.save(fence, checkpoint);
        if (checkpoint.status === 'completed') {
          answers.push(receipt);
          if (!receipt.written) {
            // Refused: the run is still held and running, its last checkpoint in place.
            expect((await memory.load('race-2'))!.run).toMatchObject({
              status: 'running',
              owner: expect.any(String),
            });
          }
        }
        return receipt;
      },
    };
    const model = scriptedModel([{ text: 'One.' }, { text: 'Two.' }]);
    const agent = defineAgent({ name: 'refused', model, durable: { store, clock } });
    await expect(agent.execute('Go.', { runId: 'race-2' })).resolves.toMatchObject({
      output: 'Two.',
    });
    expect(answers).toEqual([
      { written: false, mail: true },
      { written: true, mail: false },
    ]);
  });

  it('a follow-up sent during a trip reaches the next model call, the mailbox read once for it', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const counted = countingMailbox(memoryStore({ clock }));
    const self: { agent?: { followUp(runId: string, text: string): Promise<unknown> } } = {};
    const note = defineTool({
      name: 'note',
      description: 'Takes a note.',
      input: z.object({ text: z.string() }),
      execute: async ({ text }) => {
        if (text === 'b') await self.agent!.followUp('mail-1', 'Also c.');
        return { noted: text };
      },
    });
    const model = scriptedModel([
      { toolCalls: [{ id: 'n1', name: 'note', args: { text: 'a' } }] },
      { toolCalls: [{ id: 'n2', name: 'note', args: { text: 'b' } }] },
      { toolCalls: [{ id: 'n3', name: 'note', args: { text: 'c' } }] },
      { text: 'Noted a, b and c.' },
    ]);
    const agent = defineAgent({
      name: 'noter',
      model,
      tools: [note],
      durable: { store: counted.store, clock },
    });
    self.agent = agent;
    await expect(agent.execute('Note a and b.', { runId: 'mail-1' })).resolves.toMatchObject({
      output: 'Noted a, b and c.',
    });
    expect(users(model.calls[2]!.messages)).toEqual(['Note a and b.', 'Also c.']);
    expect(counted.reads()).toBe(1);
  });
});

describe('a run nobody signals', () => {
  it('never reads its mailbox between trips', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const counted = countingMailbox(memoryStore({ clock }));
    const note = defineTool({
      name: 'note',
      description: 'Takes a note.',
      input: z.object({ text: z.string() }),
      execute: async ({ text }) => ({ noted: text }),
    });
    const model = scriptedModel([
      ...['a', 'b', 'c', 'd', 'e'].map((text, i) => ({
        toolCalls: [{ id: `n${i}`, name: 'note', args: { text } }],
      })),
      { text: 'Five notes.' },
    ]);
    const agent = defineAgent({
      name: 'quiet',
      model,
      tools: [note],
      maxTrips: 10,
      durable: { store: counted.store, clock },
    });
    await expect(agent.execute('Take five notes.', { runId: 'quiet-1' })).resolves.toMatchObject({
      output: 'Five notes.',
      trips: 6,
    });
    expect(counted.reads()).toBe(0);
  });
});
