import { defineAgent, defineTool, waitUntilTool, type Clock, type DurableStore } from '@cairn/sdk';
import { createFakeClock, scriptedModel, type Script } from '@cairn/testing';
import { createClient, createWorker, type WorkerEvent } from '@cairn/worker';
import { afterEach, expect, it } from 'vitest';
import { z } from 'zod';
import { createRedisHarness, skippedBecause, unreachable, type RedisHarness } from './support.js';

// A worker on Redis that never polls: it learns of waiting runs only from the store's wake-up time (`nextWake`,
// on its own fake clock, months behind the server's) and from the notifications a signal publishes.
const reason = await unreachable();
/** Longer than any test: the worker wakes only by a notification or its wake-up timer. */
const neverPoll = 2 ** 31 - 1;

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const each of open.splice(0).reverse()) await each.close();
});

async function until(predicate: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await predicate())) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** An agent whose `refund` needs approval, with `wait_until` to sleep; `refunds` counts refunds made. */
function refundAgent(store: DurableStore, clock: Clock, script?: Script) {
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
  const agent = defineAgent({
    name: 'support',
    model: scriptedModel(
      script ?? [
        { toolCalls: [{ id: 'c-refund', name: 'refund', args: { order: 'o-1' } }] },
        { text: 'Refunded.' },
      ],
    ),
    tools: [refund, waitUntilTool()],
    approval: { tools: { refund: true } },
    maxTrips: 5,
    durable: { store, clock },
  });
  return { agent, refunds };
}

async function setup(script?: Script) {
  const harness: RedisHarness = await createRedisHarness('worker-waits');
  open.push(harness);
  const store = await harness.store();
  const clock = createFakeClock();
  const { agent, refunds } = refundAgent(store, clock, script);
  const events: WorkerEvent[] = [];
  const worker = createWorker({
    store,
    agents: [agent],
    clock,
    leaseMs: 60_000,
    pollMs: neverPoll,
    shutdownSignals: [],
    onEvent: (event) => events.push(event),
  });
  open.push(worker);
  const claims = () => events.filter((event) => event.type === 'claimed').length;
  return { store, clock, agent, refunds, worker, claims, client: createClient({ store }) };
}

if (reason !== undefined) {
  skippedBecause(reason);
} else {
  it('starts a scheduled run at its time on the worker’s clock, not before', async () => {
    const { clock, agent, client, claims, worker } = await setup([{ text: 'started' }]);
    const { runId } = await client.start(agent, 'later', { startAt: clock.now() + 60_000 });
    // Started after the run was scheduled, so its first pass sets the timer: then it sleeps on that one timer.
    await worker.start();
    await until(() => clock.pendingTimers() === 1);
    await clock.advance(59_999);
    expect(claims()).toBe(0);
    expect((await client.get(runId))?.status).toBe('waiting');
    await clock.advance(1);
    expect(await client.result(runId, { pollMs: 5 })).toBe('started');
  });

  it('wakes an agent waiting for approval when the approval is sent, and refunds once', async () => {
    const { worker, client, agent, refunds } = await setup();
    await worker.start();
    const { runId } = await client.start(agent, 'Refund order o-1');
    await until(
      async () => (await client.get(runId))?.status === 'waiting' && worker.active().length === 0,
    );
    expect(await client.get(runId)).toMatchObject({ owner: null, leaseUntil: null });
    const [pending] = (await client.get(runId))!.waitingFor!.approvals;
    await client.approve(runId, pending!.callId, { argsHash: pending!.argsHash });
    expect(await client.result(runId, { pollMs: 5 })).toBe('Refunded.');
    expect(refunds).toEqual(['o-1']);
  });
}
