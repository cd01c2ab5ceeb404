import { CairnError, defineAgent, memoryStore, type DurableStore } from '@cairn/sdk';
import { createFakeClock, scriptedModel } from '@cairn/testing';
import { createClient, createWorker, type WorkerEvent } from '@cairn/worker';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from './support.js';

// Issue 30, defect 2: a run whose every attempt failed before it could go on was parked and tried again
// forever (a release is not a recovery, so it was never dead-lettered). DESIGN invariant 10: every run ends.
const workers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.close()));
});

/** A store that refuses every checkpoint of one run, for a reason no retry fixes (a value too large, say). */
function refusingCheckpointsOf(store: DurableStore, runId: string): DurableStore {
  return {
    ...store,
    save: async (fence, checkpoint) => {
      if (fence.runId === runId)
        throw new CairnError('STORE_FAILED', 'value too long for type character varying(10485760)');
      return store.save(fence, checkpoint);
    },
  };
}

describe('a worker with a run whose every attempt fails before it can go on', () => {
  it('dead-letters it after maxStalls attempts with the reason, and the other runs are not held up', async () => {
    const clock = createFakeClock();
    const inner = memoryStore({ clock });
    const store = refusingCheckpointsOf(inner, 'stuck');
    const agent = defineAgent({
      name: 'hello',
      model: scriptedModel(Array.from({ length: 2 }, () => ({ text: 'Hi.' }))),
      tools: [],
      durable: { store, clock },
    });
    const client = createClient({ store });
    await client.start(agent, 'Hello', { runId: 'stuck' });
    const events: WorkerEvent[] = [];
    const worker = createWorker({
      store,
      agents: [agent],
      clock,
      pollMs: 1_000,
      maxStalls: 3,
      shutdownSignals: [],
      onEvent: (event) => events.push(event),
    });
    workers.push(worker);
    await worker.start();
    await client.start(agent, 'Hello', { runId: 'fine' });

    const ofStuck = () =>
      events.filter((e) => 'runId' in e && e.runId === 'stuck').map((e) => e.type);
    while (!ofStuck().includes('dead_lettered')) {
      await until(() => worker.active().length === 0);
      await clock.advance(5_001);
      if (ofStuck().length > 40) throw new Error(`not ended: ${ofStuck().join(', ')}`);
    }
    expect(ofStuck().filter((type) => type === 'suspended')).toHaveLength(3);
    const stuck = (await inner.load('stuck'))!.run;
    expect(stuck).toMatchObject({ status: 'dead_lettered', stalls: 3 });
    expect(stuck.error?.message).toContain('value too long');
    expect((await inner.load('fine'))!.run.status).toBe('completed');

    // Ended: never claimed again.
    const before = ofStuck().length;
    for (let i = 0; i < 5; i += 1) await clock.advance(60_001);
    await until(() => worker.active().length === 0);
    expect(ofStuck()).toHaveLength(before);
  });
});

describe('a worker with a run whose stored rows cannot be read', () => {
  it('says so once, gives it back, and looks at it again less and less often, not in a loop', async () => {
    const clock = createFakeClock();
    const store = memoryStore({ clock });
    const agent = defineAgent({
      name: 'hello',
      model: scriptedModel([{ text: 'Hi.' }]),
      tools: [],
      durable: { store, clock },
    });
    // A snapshot no Cairn version wrote: SNAPSHOT_INVALID for whoever performs it.
    await store.create({
      runId: 'garbled',
      status: 'queued',
      kind: 'agent',
      name: 'hello',
      signature: agent.signature,
      snapshot: { format: 99 },
    });
    const events: WorkerEvent[] = [];
    const worker = createWorker({
      store,
      agents: [agent],
      clock,
      pollMs: 1_000,
      shutdownSignals: [],
      onEvent: (event) => events.push(event),
    });
    workers.push(worker);
    await worker.start();
    const of = (type: string) =>
      events.filter((e) => e.type === type && 'runId' in e && e.runId === 'garbled');
    await until(() => of('skipped').length === 1 && worker.active().length === 0);
    // Ten minutes: parked 1, 2, 4 minutes in turn, so claimed four times in all, said once.
    for (let second = 0; second < 600; second += 1) {
      await clock.advance(1_000);
      await until(() => worker.active().length === 0);
    }
    expect(of('skipped')).toHaveLength(1);
    expect(of('claimed')).toHaveLength(4);
    expect((await store.load('garbled'))!.run).toMatchObject({ owner: null, status: 'queued' });
  });
});
