import {
  CairnError,
  defineAgent,
  defineTool,
  memoryStore,
  type DurableStore,
  type ModelMessage,
} from '@cairn/sdk';
import { createFakeClock, scriptedModel, type FakeClock } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { interceptWrites } from './interleave.js';

const leaseMs = 30_000;

/**
 * A store that answers nothing between `from` and `until` (fake time), as a Redis Cluster does while a replica
 * takes over a failed master (its node timeout plus about a second; 18.7 s with Redis's defaults), or a Postgres
 * while its primary restarts: writes and renewals fail with a retryable `STORE_UNAVAILABLE`.
 */
function failingOver(store: DurableStore, clock: FakeClock) {
  const window = { from: Infinity, until: -Infinity };
  const refused: string[] = [];
  const check = (operation: string) => {
    const now = clock.now();
    if (now < window.from || now >= window.until) return;
    refused.push(operation);
    throw new CairnError('STORE_UNAVAILABLE', 'the cluster is failing over', { retryable: true });
  };
  const writes = interceptWrites(store, (kind) => check(kind));
  const wrapped: DurableStore = {
    ...writes,
    renew: async (lease, ttl) => {
      check('renew');
      return store.renew(lease, ttl);
    },
  };
  return { store: wrapped, window, refused };
}

/** An agent whose one tool call takes `toolMs` and starts the store's failover as it begins. */
function world(options: { outageMs: number; toolMs: number }) {
  const clock = createFakeClock({ autoAdvance: true });
  const inner = memoryStore({ clock });
  const { store, window, refused } = failingOver(inner, clock);
  const ran: string[] = [];
  const charge = defineTool({
    name: 'charge',
    description: 'Charges a card.',
    input: z.object({ cents: z.number() }),
    execute: async ({ cents }, ctx) => {
      ran.push(ctx.toolCallId);
      window.from = clock.now();
      window.until = clock.now() + options.outageMs;
      await clock.sleep(options.toolMs);
      return { charged: cents };
    },
  });
  const model = scriptedModel([
    { toolCalls: [{ id: 'c1', name: 'charge', args: { cents: 1200 } }] },
    { text: 'charged' },
  ]);
  const agent = defineAgent({
    name: 'billing',
    model,
    tools: [charge],
    durable: { store, clock, leaseMs },
  });
  return { agent, inner, ran, refused, clock };
}

const unknownCalls = (messages: readonly ModelMessage[]) =>
  messages.filter((m) => m.role === 'tool' && m.outcome === 'unknown');

describe('a store that fails over while a run holds its lease', () => {
  it('is waited through when the outage ends before the lease would: no lease lost, no suspension, nothing unknown', async () => {
    // Down for 19 s from the tool's start; the tool runs 15 s, so its result and two heartbeats meet the outage.
    const { agent, inner, ran, refused } = world({ outageMs: 19_000, toolMs: 15_000 });
    const result = await agent.execute('charge 12 EUR', { runId: 'failover' });
    expect(result.output).toBe('charged');
    expect(ran).toEqual(['c1']);
    expect(unknownCalls(result.messages)).toEqual([]);
    expect(refused).toContain('renew');
    expect(refused.some((operation) => operation !== 'renew')).toBe(true);
    const stored = (await inner.load('failover'))?.run;
    expect(stored).toMatchObject({ status: 'completed', epoch: 1, recoveries: 0 });
  });

  it('loses the lease when the outage outlasts it, and the next holder reports the call unknown, not run again', async () => {
    const { agent, inner, ran, clock } = world({ outageMs: 60_000, toolMs: 5_000 });
    await expect(agent.execute('charge 12 EUR', { runId: 'long-outage' })).rejects.toMatchObject({
      code: expect.stringMatching(/LEASE_LOST|RUN_SUSPENDED/),
    });
    await clock.advance(60_000);
    const resumed = await agent.resume('long-outage');
    expect(ran).toEqual(['c1']);
    expect(unknownCalls(resumed.messages)).toHaveLength(1);
    expect((await inner.load('long-outage'))?.run.status).toBe('completed');
  });
});
