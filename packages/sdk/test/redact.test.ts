import {
  defineAgent,
  defineTool,
  memoryStore,
  redactFields,
  type DurableStore,
  type ModelRequest,
} from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const card = '4111 1111 1111 1111';

/** A payment lookup whose result holds a card number, a CVV and a token, nested and in a list. */
function lookup(redact?: readonly string[] | ((result: unknown) => unknown)) {
  return defineTool({
    name: 'lookup_payment',
    description: 'Looks a payment up.',
    input: z.object({ order: z.string() }),
    execute: () => ({
      order: 'order 17',
      card: { number: card, expiry: '12/29', cvv: '123' },
      attempts: [{ at: '2026-12-01', card: { number: card }, token: 'tok_secret' }],
    }),
    ...(redact === undefined ? {} : { redact }),
  });
}

async function run(
  store: DurableStore,
  redact?: readonly string[] | ((result: unknown) => unknown),
) {
  const requests: ModelRequest[] = [];
  const model = scriptedModel((request, turn) => {
    requests.push(structuredClone(request));
    return turn === 0
      ? { toolCalls: [{ id: 'c1', name: 'lookup_payment', args: { order: 'order 17' } }] }
      : { text: 'The payment went through.' };
  });
  const agent = defineAgent({
    name: 'payments',
    model,
    tools: [lookup(redact)],
    durable: { store, stream: true },
  });
  const result = await agent.execute('Did order 17 go through?', { runId: 'r' });
  const rows = JSON.stringify([await store.load('r'), await store.readStream!('r')]);
  return { result, rows, secondRequest: JSON.stringify(requests[1]) };
}

describe("a tool's redact", () => {
  it('masks named fields wherever they are: nothing of them is written, and the model sees the mask', async () => {
    const { result, rows, secondRequest } = await run(memoryStore(), [
      'cvv',
      'card.number',
      'token',
    ]);
    expect(result.output).toBe('The payment went through.');
    for (const secret of [card, '"123"', 'tok_secret']) {
      expect(rows).not.toContain(secret);
      expect(secondRequest).not.toContain(secret);
    }
    expect(secondRequest).toContain('[redacted]');
    // What is not named is kept.
    expect(rows).toContain('12/29');
    expect(secondRequest).toContain('2026-12-01');
  });

  it('without redact the same run keeps them (the test would see a leak)', async () => {
    const { rows } = await run(memoryStore());
    expect(rows).toContain(card);
    expect(rows).toContain('tok_secret');
  });

  it('takes a function, and redactFields drops fields with mask undefined', async () => {
    const dropCards = redactFields(['card'], { mask: undefined });
    const { rows } = await run(memoryStore(), dropCards);
    expect(rows).not.toContain(card);
    expect(rows).not.toContain('"card"');
    expect(dropCards({ card: 1, keep: [{ card: 2, ok: true }] })).toEqual({ keep: [{ ok: true }] });
    const original = { card: { number: card } };
    expect(redactFields(['number'])(original)).toEqual({ card: { number: '[redacted]' } });
    expect(original.card.number).toBe(card);
    expect(() => redactFields(['card..number'])).toThrow(/dotted path/);
  });
});
