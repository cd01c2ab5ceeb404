import { CairnError, defineAgent, defineTool, memoryStore } from '@cairn/sdk';
import { createFakeClock, scriptedModel } from '@cairn/testing';
import { createClient } from '@cairn/worker';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

// Issue 30: an agent that fails or is cancelled does not complete with `unlessMail`, so a follow-up accepted just
// then is left unread although its sender got a receipt. Decided: a failure or a cancel is final (the run does
// not come back to read a message); the message stays in the ended run's mailbox, where the sender can see it was
// never read (`client.mailbox`).
describe('a message accepted while an agent ends failed or cancelled', () => {
  function looping() {
    const clock = createFakeClock({ autoAdvance: true });
    const store = memoryStore({ clock });
    const echo = defineTool({
      name: 'echo',
      description: 'Echoes.',
      input: z.object({ text: z.string() }),
      execute: ({ text }) => ({ echo: text }),
    });
    const agent = defineAgent({
      name: 'looper',
      model: scriptedModel(
        Array.from({ length: 3 }, (_, i) => ({
          toolCalls: [{ id: `e${i}`, name: 'echo', args: { text: String(i) } }],
        })),
      ),
      tools: [echo],
      maxTrips: 2,
      durable: { store, clock },
    });
    return { store, agent, client: createClient({ store, clock }) };
  }

  it('is not acted on by a run that fails, and the client lists it as never read', async () => {
    const { agent, client } = looping();
    let receipt: unknown;
    const ended = await agent
      .execute('Echo forever', {
        runId: 'fails',
        onBoundary: async (b) => {
          if (b.point === 'checkpoint.before' && b.status === 'failed')
            receipt = await client.followUp('fails', 'Stop after two.');
        },
      })
      .catch((e: unknown) => e);
    expect(ended).toSatisfy((e) => e instanceof CairnError && e.code === 'MAX_TRIPS_EXCEEDED');
    expect(receipt).toMatchObject({ seq: 1, duplicate: false });
    expect((await client.get('fails'))?.status).toBe('failed');
    expect(await client.mailbox('fails')).toMatchObject([
      { seq: 1, name: 'cairn.follow-up', payload: { content: 'Stop after two.' } },
    ]);
    // Once it ended, a message is refused.
    await expect(client.followUp('fails', 'Hello?')).rejects.toSatisfy(
      (e) => e instanceof CairnError && e.code === 'RUN_ENDED',
    );
  });

  it('is not acted on by a run that is cancelled', async () => {
    const { agent, client } = looping();
    const controller = new AbortController();
    const ended = await agent
      .execute('Echo forever', {
        runId: 'cancelled',
        signal: controller.signal,
        onBoundary: async (b) => {
          if (b.point === 'effect.before' && b.effectId === 'trip-1/model') {
            await client.followUp('cancelled', 'Also this.');
            controller.abort();
          }
        },
      })
      .catch((e: unknown) => e);
    expect(ended).toSatisfy((e) => e instanceof CairnError && e.code === 'RUN_CANCELLED');
    expect((await client.get('cancelled'))?.status).toBe('cancelled');
    expect((await client.mailbox('cancelled')).map((s) => s.payload)).toEqual([
      { content: 'Also this.' },
    ]);
    await expect(client.mailbox('nobody')).rejects.toSatisfy(
      (e) => e instanceof CairnError && e.code === 'RUN_NOT_FOUND',
    );
  });
});
