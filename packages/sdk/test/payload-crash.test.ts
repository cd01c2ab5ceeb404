import { randomBytes } from 'node:crypto';
import {
  aesGcmCodec,
  defineAgent,
  defineTool,
  deflateCodec,
  foldStream,
  memoryStore,
  protectPayloads,
  type AgentResult,
  type DurableStore,
} from '@cairn/sdk';
import { exploreCrashes, observeAgent, scriptedModel, type ScriptedTurn } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

// Markers in every place a person's data goes: the user's message, the model's text, tool arguments, tool
// results and a tool's error.
const marker = (n: number) => `MARKER-${n}-7f3a`;
const script: ScriptedTurn[] = [
  {
    text: `Looking up ${marker(1)}.`,
    toolCalls: [
      { id: 'lookup-1', name: 'lookup', args: { query: marker(2) } },
      { id: 'charge-1', name: 'charge', args: { card: marker(3) } },
    ],
  },
  { toolCalls: [{ id: 'refund-1', name: 'refund', args: { card: marker(4) } }] },
  { text: `{"answer":"${marker(5)}"}` },
];

function world() {
  const model = scriptedModel(script, { streamPieces: 3 });
  const tools = [
    defineTool({
      name: 'lookup',
      description: 'Look something up.',
      input: z.object({ query: z.string() }),
      idempotent: true,
      execute: async () => ({ found: marker(6) }),
    }),
    defineTool({
      name: 'charge',
      description: 'Charge a card.',
      input: z.object({ card: z.string() }),
      execute: async () => ({ receipt: marker(7) }),
    }),
    defineTool({
      name: 'refund',
      description: 'Refund a card.',
      input: z.object({ card: z.string() }),
      execute: async () => {
        throw new Error(`refund refused for ${marker(8)}`);
      },
    }),
  ];
  return { model, tools };
}

describe('an agent on a store behind a payload codec', () => {
  it('resumes from every crash point as without a codec, and stores no marker in plaintext', async () => {
    const codec = [deflateCodec(), aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' })];
    const raws: DurableStore[] = [];
    const report = await exploreCrashes<string, AgentResult<unknown>>({
      input: `Please help, my card is ${marker(0)}.`,
      store: (clock) => {
        const raw = memoryStore({ clock });
        raws.push(raw);
        return protectPayloads(raw, { codec });
      },
      setup() {
        const { model, tools } = world();
        return {
          create: (store, clock) =>
            defineAgent({
              name: 'payments',
              model,
              tools,
              maxTrips: 5,
              output: z.object({ answer: z.string() }),
              durable: { store, clock, leaseMs: 30_000, stream: { coalesceChars: 8 } },
            }),
          sideEffects: () => ({}),
        };
      },
      observe: observeAgent,
      idempotent: (key) => key.startsWith('lookup'),
    });
    expect(report.violations).toEqual([]);
    expect(report.boundaries).toBeGreaterThanOrEqual(10);
    expect(raws.length).toBe(report.boundaries + 1);
    for (const raw of raws) {
      const runId = 'crash-harness-run';
      const rows = JSON.stringify([
        await raw.load(runId),
        await raw.list(),
        await raw.mailbox(runId),
        await raw.readStream!(runId, { limit: 10_000 }),
      ]);
      expect(rows).not.toMatch(/MARKER-\d+-7f3a/);
      expect(rows).toContain('cairn:1:deflate+aes-gcm@k1:');
      // Read through the codec, the stream says what the model said.
      const read = await protectPayloads(raw, { codec }).readStream!(runId, { limit: 10_000 });
      expect(foldStream(read).text).toBe(script.map((turn) => turn.text ?? '').join(''));
    }
  });
});
