import { defineAgent, defineTool, memoryStore, type DurableStore } from '@cairn/sdk';
import { createFakeClock, scriptedModel, type FakeClock } from '@cairn/testing';
import { createClient, createWorker, type WorkerEvent } from '@cairn/worker';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { gate } from './support.js';

// Issue 16, point 8: a tool that ignores `ctx.signal` kept a cancelled run `running` and `close()` hanging.
const workers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.close()));
});

/** Whether `predicate` holds once pending callbacks have run (a bounded number of event loop turns). */
async function soon(predicate: () => boolean): Promise<boolean> {
  for (let i = 0; i < 50 && !predicate(); i += 1) await new Promise((r) => setImmediate(r));
  return predicate();
}

/** Whether a promise has settled once pending callbacks have run. */
async function settles(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  return soon(() => settled);
}

/** A one-call agent whose tool ignores its signal and waits for `late` (opened after the test). */
function hostileWorld() {
  const clock = createFakeClock();
  const store = memoryStore({ clock });
  const hold = gate();
  const late = gate();
  const ran: Record<string, number> = {};
  const pay = defineTool({
    name: 'pay',
    description: 'Pays; ignores its signal.',
    input: z.object({}),
    timeoutMs: 5_000,
    execute: async (_args, ctx) => {
      ran[ctx.runId] = (ran[ctx.runId] ?? 0) + 1;
      hold.enter();
      await late.opened;
      return 'paid late';
    },
  });
  const model = scriptedModel([
    { toolCalls: [{ id: 'p1', name: 'pay', args: {} }] },
    { text: 'done' },
  ]);
  const agent = defineAgent({
    name: 'payer',
    model,
    tools: [pay],
    durable: { store, clock, leaseMs: 3_000 },
  });
  return { clock, store, hold, late, ran, model, agent };
}

function start(
  store: DurableStore,
  agent: ReturnType<typeof hostileWorld>['agent'],
  owner: string,
  clock: FakeClock,
) {
  const events: WorkerEvent[] = [];
  const worker = createWorker({
    store,
    agents: [agent],
    owner,
    clock,
    leaseMs: 3_000,
    heartbeatMs: 1_000,
    pollMs: 10,
    shutdownSignals: [],
    onEvent: (event) => events.push(event),
  });
  workers.push(worker);
  return { worker, events };
}

describe('a worker whose run is in a tool that ignores its signal', () => {
  it('closes once the tool’s timeout abandons it, and the next worker tells the model outcome unknown', async () => {
    const { clock, store, hold, late, ran, model, agent } = hostileWorld();
    const client = createClient({ store });
    const { runId } = await client.start(agent, 'go');
    const first = start(store, agent, 'w1', clock);
    await first.worker.start();
    await hold.reached;

    const closing = first.worker.close();
    await clock.advance(5_000);
    expect(await settles(closing)).toBe(true);
    expect(first.events.map((event) => event.type)).toContain('handed_over');
    expect(await client.get(runId)).toMatchObject({ status: 'running', owner: null });

    const second = start(store, agent, 'w2', clock);
    await second.worker.start();
    expect(await client.result(runId, { pollMs: 0 })).toBe('done');
    const answer = model.calls[1]?.messages.find((message) => message.role === 'tool');
    expect(answer).toMatchObject({ outcome: 'unknown', content: { error: 'OUTCOME_UNKNOWN' } });
    late.open();
    expect(ran).toEqual({ [runId]: 1 });
  });

  it('ends a cancelled run cancelled a short grace after its heartbeat hears of it, and closes at once', async () => {
    const { clock, store, hold, late, agent } = hostileWorld();
    const client = createClient({ store });
    const { runId } = await client.start(agent, 'go');
    const { worker, events } = start(store, agent, 'w1', clock);
    await worker.start();
    await hold.reached;

    expect(await client.cancel(runId)).toBe('requested');
    await clock.advance(1_000); // the heartbeat hears of the cancel: the tool's signal aborts
    await clock.advance(1_000); // the grace after the abort
    expect(await soon(() => events.some((event) => event.type === 'cancelled'))).toBe(true);
    expect((await client.get(runId))?.status).toBe('cancelled');
    expect(await settles(worker.close())).toBe(true);
    late.open();
  });
});
