import { createRunner, memoryStore, type DurableDefinition } from '@cairn/sdk';
import { createClient, createWorker, type WorkerEvent } from '@cairn/worker';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from './support.js';

// Issue 16, point 5: a run whose step function throws was released without a final status and claimed again
// at once, forever, running its effects again each time. A step is deterministic: it would throw again.
const workers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.close()));
});

/** Charges once (a non-idempotent effect), then its step throws on the charge's result: a bug. */
function brokenDefinition(charges: {
  count: number;
}): DurableDefinition<{ n: number }, string, string> {
  return {
    kind: 'custom',
    name: 'broken',
    signature: 'broken-1',
    init: () => ({ n: 0 }),
    step: (state, event) => {
      if (event.type === 'start') {
        return {
          state,
          commands: [
            { type: 'checkpoint' },
            { type: 'perform', id: 'charge', effect: { kind: 'charge' }, idempotent: false },
          ],
        };
      }
      throw new TypeError('Cannot read properties of undefined (reading "amount")');
    },
    perform: async () => {
      charges.count += 1;
      return { charged: true };
    },
    parseState: (state) => state as { n: number },
    parseOutput: (output) => output as string,
    driftError: () => new Error('drift') as never,
  };
}

describe('a run whose step function throws', () => {
  it('ends failed with RUN_FAILED through execute, its effect run once; resume returns that end', async () => {
    const store = memoryStore();
    const charges = { count: 0 };
    const runner = createRunner(brokenDefinition(charges), { store });
    await expect(runner.execute('go', { runId: 'b1' })).rejects.toMatchObject({
      code: 'RUN_FAILED',
      message: expect.stringMatching(/reading "amount"/),
    });
    expect((await store.load('b1'))?.run.status).toBe('failed');
    await expect(runner.resume('b1')).rejects.toMatchObject({ code: 'RUN_FAILED' });
    expect(charges.count).toBe(1);
  });

  it('is said failed once by a worker, and never claimed again', async () => {
    const store = memoryStore();
    const charges = { count: 0 };
    const definition = brokenDefinition(charges);
    const client = createClient({ store });
    const { runId } = await client.start(
      { kind: 'custom', name: 'broken', definition: definition as never },
      'go',
    );
    const events: WorkerEvent[] = [];
    const worker = createWorker({
      store,
      definitions: [{ kind: 'custom', name: 'broken', definition }],
      pollMs: 5,
      shutdownSignals: [],
      onEvent: (event) => events.push(event),
    });
    workers.push(worker);
    await worker.start();
    await until(() => events.some((event) => event.type === 'failed' || event.type === 'skipped'));
    // Time for a storm to show: many polls.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(events.filter((event) => 'runId' in event).map((event) => event.type)).toEqual([
      'claimed',
      'failed',
    ]);
    expect((await client.get(runId))?.status).toBe('failed');
    expect(charges.count).toBe(1);
  });
});
