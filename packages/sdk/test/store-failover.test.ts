import {
  CairnError,
  defineAgent,
  definePlanner,
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
 * while its primary restarts: writes, renewals and releases fail with a retryable `STORE_UNAVAILABLE`.
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
    release: async (lease) => {
      check('release');
      return store.release(lease);
    },
  };
  return { store: wrapped, window, refused };
}

/** An agent whose one tool call takes `toolMs` and starts the store's failover as it begins. */
function world(options: {
  outageMs: number;
  toolMs: number;
  storeRetry?: { maxElapsedMs: number };
}) {
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
    durable: {
      store,
      clock,
      leaseMs,
      ...(options.storeRetry && { storeRetry: options.storeRetry }),
    },
  });
  return { agent, inner, ran, refused, clock, window };
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

describe('a run suspended because its store stayed down past storeRetry', () => {
  it('hands its lease back once the store answers again before the lease would run out: no recovery is counted', async () => {
    const { agent, inner, ran, clock, window } = world({
      outageMs: 12_000,
      toolMs: 0,
      storeRetry: { maxElapsedMs: 5_000 },
    });
    await expect(agent.execute('charge 12 EUR', { runId: 'suspended' })).rejects.toMatchObject({
      code: 'RUN_SUSPENDED',
    });
    // Given back as soon as the store answered, long before the lease would have run out.
    expect((await inner.load('suspended'))?.run).toMatchObject({ owner: null, recoveries: 0 });
    expect(clock.now() - window.from).toBeLessThan(leaseMs);

    const resumed = await agent.resume('suspended');
    expect(resumed.output).toBe('charged');
    expect(ran).toEqual(['c1']);
    expect((await inner.load('suspended'))?.run).toMatchObject({
      status: 'completed',
      epoch: 2,
      recoveries: 0,
    });
  });
});

/** A planner whose one node is a child agent; the child's creation meets an outage the planning call starts. */
function plannerWorld(outageMs: number, storeRetry?: { maxElapsedMs: number }) {
  const clock = createFakeClock({ autoAdvance: true });
  const inner = memoryStore({ clock });
  const refusedCreates: number[] = [];
  let outageUntil = -Infinity;
  const store: DurableStore = {
    ...inner,
    create: async (run) => {
      if (run.parent !== undefined && clock.now() < outageUntil) {
        refusedCreates.push(clock.now());
        throw new CairnError('STORE_UNAVAILABLE', 'the cluster is failing over', {
          retryable: true,
        });
      }
      return inner.create(run);
    },
  };
  const concierge = defineAgent({ name: 'concierge', model: scriptedModel([{ text: 'booked' }]) });
  const plan = { nodes: [{ id: 'hotel', capability: 'concierge', input: 'book', dependsOn: [] }] };
  const planning = scriptedModel((_request, turn) => {
    if (turn === 0) outageUntil = clock.now() + outageMs;
    return { text: JSON.stringify(plan) };
  });
  const planner = definePlanner({
    name: 'trip',
    model: planning,
    capabilities: [{ name: 'concierge', description: 'Books.', executable: concierge }],
    durable: { store, clock, leaseMs, ...(storeRetry === undefined ? {} : { storeRetry }) },
  });
  return { planner, planning, refusedCreates, inner, clock };
}

describe('a store that fails over while a planner starts a node’s child run', () => {
  it('is waited through like any write: the node is not failed, the plan not asked for again', async () => {
    const { planner, planning, refusedCreates } = plannerWorld(5_000);
    const result = await planner.execute('a trip', { runId: 'trip' });
    expect(refusedCreates.length).toBeGreaterThan(0);
    expect(result.nodes.map((node) => [node.id, node.status])).toEqual([['hotel', 'completed']]);
    expect(result.output).toEqual({ hotel: 'booked' });
    expect(planning.calls).toHaveLength(1);
  });

  it('suspends the planner when the outage outlasts storeRetry, and the resumed run still asks once', async () => {
    const { planner, planning, inner, clock } = plannerWorld(10_000, { maxElapsedMs: 2_000 });
    await expect(planner.execute('a trip', { runId: 'trip' })).rejects.toMatchObject({
      code: 'RUN_SUSPENDED',
    });
    expect((await inner.load('trip'))?.run.status).toBe('suspended');
    await clock.advance(10_000); // the store is back
    const resumed = await planner.resume('trip');
    expect(resumed.nodes.map((node) => [node.id, node.status])).toEqual([['hotel', 'completed']]);
    expect(planning.calls).toHaveLength(1);
  });
});
