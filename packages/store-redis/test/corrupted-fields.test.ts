import { defineAgent, defineTool, isCairnError } from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { expect, it } from 'vitest';
import { z } from 'zod';
// The test reaches into the key layout to change a run's hash as a hand-edit would.
import { keySpace } from '../src/keys.js';
import { createRedisHarness, skippedBecause, unreachable } from './support.js';

// Issue 31 on Redis: a field of a run hash changed behind the store's back (not JSON) harms that run alone: a
// listing shows the others and marks it, loading and resuming it are SNAPSHOT_INVALID, nothing runs again.
const reason = await unreachable();

if (reason !== undefined) {
  skippedBecause(reason);
} else {
  it('marks a run whose snapshot field is not JSON in a listing, and refuses it alone', async () => {
    const harness = await createRedisHarness('corrupted-fields');
    try {
      const store = await harness.store();
      const keys = keySpace(harness.prefix);
      const refunds: string[] = [];
      const refund = defineTool({
        name: 'refund',
        description: 'Refunds an order.',
        input: z.object({ order: z.string() }),
        execute: ({ order }) => {
          refunds.push(order);
          return { refunded: order };
        },
      });
      const agent = () =>
        defineAgent({
          name: 'refunder',
          model: scriptedModel([
            { toolCalls: [{ id: 'c1', name: 'refund', args: { order: 'r1' } }] },
            { text: 'refunded' },
          ]),
          tools: [refund],
          durable: { store },
        });
      for (const runId of ['a', 'b', 'c']) await agent().execute('refund r1', { runId });
      expect(refunds).toEqual(['r1', 'r1', 'r1']);
      for (const field of ['snapshot', 'output']) {
        await harness.admin.hset(keys.run('b').run, field, '{"broken');
        const listed = await store.list();
        expect(listed.map((run) => run.runId)).toEqual(['a', 'b', 'c']);
        expect(listed[1]).toMatchObject({ snapshot: null, unreadable: expect.any(String) });
        expect(listed[0]!.unreadable).toBeUndefined();
        await expect(store.load('b')).rejects.toSatisfy(
          (e) => isCairnError(e) && e.code === 'SNAPSHOT_INVALID',
        );
      }
    } finally {
      await harness.close();
    }
  });
}
