import { randomBytes } from 'node:crypto';
import {
  aesGcmCodec,
  CairnError,
  decisionSignal,
  defineAgent,
  defineTool,
  memoryStore,
  isProtectedStore,
  pendingApprovals,
  protectPayloads,
  RunWaitingError,
  toolArgsHash,
} from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const card = { card: '4111 1111 1111 1111' };

function setup(argsHashKey?: Uint8Array) {
  const raw = memoryStore();
  const store = protectPayloads(raw, {
    codec: aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' }),
    ...(argsHashKey === undefined ? {} : { argsHashKey }),
  });
  const charges: string[] = [];
  const agent = defineAgent({
    name: 'payments',
    model: scriptedModel([
      { toolCalls: [{ id: 'c-charge', name: 'charge', args: card }] },
      { text: 'Charged.' },
    ]),
    tools: [
      defineTool({
        name: 'charge',
        description: 'Charges a card.',
        input: z.object({ card: z.string() }),
        execute: ({ card: number }) => (charges.push(number), { ok: true }),
      }),
    ],
    approval: { tools: { charge: true } },
    durable: { store, leaseMs: 30_000 },
  });
  return { raw, store, agent, charges };
}

async function waiting(agent: ReturnType<typeof setup>['agent']) {
  const error = await agent.execute('Charge my card', { runId: 'r-1' }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(RunWaitingError);
}

describe('decisions on held calls behind protectPayloads', () => {
  it('with argsHashKey: the store holds a keyed hash, a person approves with the plain one, the call runs once', async () => {
    const { raw, store, agent, charges } = setup(randomBytes(32));
    await waiting(agent);
    const plainHash = toolArgsHash(card);
    const stored = (await raw.load('r-1'))!.run.wait!.detail as {
      approvals: Array<{ argsHash: string }>;
    };
    expect(stored.approvals[0]!.argsHash).toMatch(/^[0-9a-f]{64}$/);
    expect(stored.approvals[0]!.argsHash).not.toBe(plainHash);
    expect(JSON.stringify(stored)).not.toContain('4111');
    // What a client reads is the run's own view: the arguments and their plain hash.
    expect(pendingApprovals((await store.load('r-1'))!.run.wait!.detail)).toMatchObject([
      { callId: 'c-charge', args: card, argsHash: plainHash },
    ]);

    // An approval of other arguments is refused, naming the hash the run waits with (not the keyed one).
    const refused = await agent
      .approve('r-1', 'c-charge', { argsHash: toolArgsHash({ card: '5500' }), by: 'ana' })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(CairnError);
    expect((refused as CairnError).data).toMatchObject({
      reason: 'other arguments',
      argsHash: plainHash,
    });

    const receipt = await agent.approve('r-1', 'c-charge', { argsHash: plainHash, by: 'ana' });
    expect(receipt.decision).toMatchObject({ approved: true, argsHash: plainHash, by: 'ana' });
    const [kept] = (await raw.mailbox('r-1')).filter((signal) => signal.name === decisionSignal);
    expect(kept!.payload).toMatchObject({ callId: 'c-charge', approved: true });
    expect(JSON.stringify(kept!.payload)).not.toContain('ana');
    expect(JSON.stringify(kept!.payload)).not.toContain(plainHash);
    // The same approval again answers the standing one.
    expect(await agent.approve('r-1', 'c-charge', { argsHash: plainHash })).toMatchObject({
      duplicate: true,
    });

    expect((await agent.resume('r-1')).output).toBe('Charged.');
    expect(charges).toEqual([card.card]);
  });

  it('without argsHashKey: the plain hash is what the store checks by, and a rejection’s reason is encoded', async () => {
    const { raw, agent, charges } = setup();
    await waiting(agent);
    const stored = (await raw.load('r-1'))!.run.wait!.detail as {
      approvals: Array<{ argsHash: string }>;
    };
    expect(stored.approvals[0]!.argsHash).toBe(toolArgsHash(card));
    await agent.reject('r-1', 'c-charge', { reason: 'card reported stolen', by: 'ana' });
    expect(JSON.stringify(await raw.mailbox('r-1'))).not.toContain('stolen');
    const result = await agent.resume('r-1');
    expect(result.output).toBe('Charged.');
    expect(charges).toEqual([]);
  });
});

describe('a stream read behind protectPayloads', () => {
  it('reads the chunks of a run deleted and created again under the same id', async () => {
    const codec = aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' });
    const raw = memoryStore();
    // One process writes the run, another reads its stream.
    const store = protectPayloads(raw, { codec });
    const reader = protectPayloads(raw, { codec });
    const run = { runId: 'again', kind: 'agent', name: 'a', signature: 's', snapshot: null };
    const say = async (text: string) => {
      await store.create(run);
      const lease = (await store.acquire('again', { owner: 'w', ttlMs: 60_000 }))!;
      await store.appendStream!(lease, [
        { position: 1, unit: 'trip-0', at: 1, part: { type: 'text', text } },
      ]);
      await store.release(lease);
    };
    await say('first life');
    expect((await reader.readStream!('again'))[0]!.part).toEqual({
      type: 'text',
      text: 'first life',
    });
    await store.delete('again');
    await say('second life');
    expect((await reader.readStream!('again'))[0]!.part).toEqual({
      type: 'text',
      text: 'second life',
    });
  });
});

describe('protectPayloads on a store already behind it', () => {
  it('is refused: a second codec would read the first one’s payloads as plaintext', () => {
    const codec = aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' });
    const once = protectPayloads(memoryStore(), { codec });
    expect(isProtectedStore(once)).toBe(true);
    expect(isProtectedStore(memoryStore())).toBe(false);
    expect(() => protectPayloads(once, { codec })).toThrow(/already behind protectPayloads/);
  });
});
