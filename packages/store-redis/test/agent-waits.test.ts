import { defineAgent, defineTool, pendingApprovals, RunWaitingError } from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { expect, it } from 'vitest';
import { z } from 'zod';
// The test reaches into the key layout to check the indexes at each step.
import { keySpace } from '../src/keys.js';
import { indexMismatches } from './index-placement.js';
import { createRedisHarness, skippedBecause, unreachable } from './support.js';

// The runtime over Redis, end to end: an agent whose refund needs approval waits holding nothing, is woken by
// the approval signal (claimable again, the workers told), and resumes to run the refund exactly once.
const reason = await unreachable();

if (reason !== undefined) {
  skippedBecause(reason);
} else {
  it('parks an agent waiting for approval, wakes it by the signal, and runs the call once', async () => {
    const harness = await createRedisHarness('agent-waits');
    try {
      const store = await harness.store();
      const keys = keySpace(harness.prefix);
      const refunds: number[] = [];
      const refund = defineTool({
        name: 'refund',
        description: 'Refunds an order.',
        input: z.object({ cents: z.number().int() }),
        execute: ({ cents }) => {
          refunds.push(cents);
          return { refunded: cents };
        },
      });
      const agent = defineAgent({
        name: 'support',
        model: scriptedModel([
          { toolCalls: [{ id: 'c-1', name: 'refund', args: { cents: 120_000 } }] },
          { text: 'Refunded.' },
        ]),
        tools: [refund],
        approval: { tools: { refund: () => true } },
        durable: { store, leaseMs: 10_000 },
      });
      const definitions = [{ kind: 'agent', name: 'support' }];

      const waiting = await agent.execute('Refund o-1', { runId: 'r-1' }).catch((e: unknown) => e);
      expect(waiting).toBeInstanceOf(RunWaitingError);
      const { run } = (await store.load('r-1'))!;
      expect(run).toMatchObject({ status: 'waiting', owner: null, leaseUntil: null });
      expect(await store.claimable({ limit: 10, definitions })).toEqual([]);
      expect(await indexMismatches(harness.admin, keys)).toEqual([]);

      let told = 0;
      const stop = await store.subscribe!(() => (told += 1));
      const [pending] = pendingApprovals(run.wait?.detail);
      await agent.approve('r-1', 'c-1', { argsHash: pending!.argsHash });
      expect(await store.claimable({ limit: 10, definitions })).toEqual(['r-1']);
      await expect.poll(() => told).toBeGreaterThan(0);
      await stop();

      const result = await agent.resume('r-1');
      expect(result.output).toBe('Refunded.');
      expect(refunds).toEqual([120_000]);
      expect(await store.mailbox('r-1')).toEqual([]);
      expect((await store.load('r-1'))?.run).toMatchObject({ status: 'completed', wait: null });
      expect(await store.claimable({ limit: 10, definitions })).toEqual([]);
      expect(await indexMismatches(harness.admin, keys)).toEqual([]);
    } finally {
      await harness.close();
    }
  });
}
