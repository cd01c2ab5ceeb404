import { CairnError, LeaseHeldError, memoryStore, type DurableStore } from '@cairn/sdk';
import { createClient, createWorker, type WorkerEvent } from '@cairn/worker';
import { afterEach, describe, expect, it } from 'vitest';
import { gate, orderAgent, until } from './support.js';

const workers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.close()));
});

function startWorker(
  store: DurableStore,
  agent: ReturnType<typeof orderAgent>['agent'],
  owner: string,
  extra: Partial<Parameters<typeof createWorker>[0]> = {},
) {
  const events: WorkerEvent[] = [];
  const worker = createWorker({
    store,
    agents: [agent],
    owner,
    leaseMs: 60_000,
    pollMs: 20,
    shutdownSignals: [],
    onEvent: (event) => events.push(event),
    ...extra,
  });
  workers.push(worker);
  return { worker, events };
}

describe('a worker with a client', () => {
  it('performs a run a client started, and the client sees its result', async () => {
    const store = memoryStore();
    const { agent, effects } = orderAgent(store);
    const client = createClient({ store });
    const started = await client.start(agent, 'place the order', { idempotencyKey: 'order-1' });
    expect(started).toMatchObject({ created: true, status: 'queued' });
    expect((await client.get(started.runId))?.status).toBe('queued');
    const { worker, events } = startWorker(store, agent, 'w1');
    await worker.start();
    expect(await client.result(started.runId, { pollMs: 10 })).toBe('all steps done');
    expect(effects).toEqual({ s1: 1, s2: 1 });
    expect(events.filter((e) => e.type === 'claimed')).toMatchObject([
      { runId: started.runId, status: 'queued', epoch: 1, takenFrom: null },
    ]);
    expect(await client.get(started.runId)).toMatchObject({
      status: 'completed',
      held: false,
      output: 'all steps done',
    });
    // The same idempotency key starts nothing new.
    const again = await client.start(agent, 'place the order', { idempotencyKey: 'order-1' });
    expect(again).toEqual({ runId: started.runId, created: false, status: 'completed' });
    expect(await client.list({ status: 'completed' })).toHaveLength(1);
  });

  it('rejects start() when its store refuses what can never work, and starts through a store that is down', async () => {
    const inner = memoryStore();
    const { agent } = orderAgent(inner);
    const refused = new CairnError('STORE_FAILED', 'The session connection goes through a pooler.');
    const misconfigured: DurableStore = { ...inner, prepare: async () => Promise.reject(refused) };
    const { worker, events } = startWorker(misconfigured, agent, 'w1');
    await expect(worker.start()).rejects.toBe(refused);
    expect(events.some((event) => event.type === 'started')).toBe(false);
    await worker.close();

    // A store that is down now may be up soon: the worker starts, says why, and its claims try again.
    let down = true;
    const flaky: DurableStore = {
      ...inner,
      prepare: async () => {
        if (down)
          throw new CairnError('STORE_UNAVAILABLE', 'connection refused', { retryable: true });
      },
    };
    const client = createClient({ store: inner });
    const { runId } = await client.start(agent, 'place the order');
    const second = startWorker(flaky, agent, 'w2');
    await second.worker.start();
    down = false;
    expect(second.events).toContainEqual(
      expect.objectContaining({ type: 'error', code: 'STORE_UNAVAILABLE' }),
    );
    expect(await client.result(runId, { pollMs: 10 })).toBe('all steps done');
  });

  it('hands a run over on close, and another worker continues it at once without re-running tools', async () => {
    const store = memoryStore();
    const hold = gate();
    const { agent, effects } = orderAgent(store, { hold });
    const client = createClient({ store });
    const { runId } = await client.start(agent, 'go');
    const first = startWorker(store, agent, 'w1');
    await first.worker.start();
    await hold.reached;
    expect((await client.get(runId))?.held).toBe(true);

    const closing = first.worker.close();
    hold.open(); // the in-flight tool finishes and is journaled; the next effect does not start
    await closing;
    expect(first.events.map((e) => e.type)).toContain('handed_over');
    const handedOver = await client.get(runId);
    expect(handedOver).toMatchObject({ status: 'running', owner: null, held: false });

    // The lease is 60 s: the second worker can only finish because the first released it.
    const second = startWorker(store, agent, 'w2');
    await second.worker.start();
    expect(await client.result(runId, { pollMs: 10 })).toBe('all steps done');
    expect(effects).toEqual({ s1: 1, s2: 1 });
    expect(second.events.find((e) => e.type === 'claimed')).toMatchObject({
      takenFrom: null,
      epoch: 2,
    });
    // Its history tells the hand-over: w1's attempt handed over, w2's taken from nobody.
    const attempts = (await client.events(runId)).filter(
      (e) => e.type === 'attempt.started' || e.type === 'attempt.abandoned',
    );
    expect(attempts).toMatchObject([
      { type: 'attempt.started', owner: 'w1', epoch: 1, takenFrom: null },
      { type: 'attempt.abandoned', owner: 'w1', epoch: 1, how: 'handed_over' },
      { type: 'attempt.started', owner: 'w2', epoch: 2, takenFrom: null },
    ]);
  });

  it('cancels a queued run at once and a running one at its holder’s next heartbeat', async () => {
    const store = memoryStore();
    const hold = gate();
    const { agent } = orderAgent(store, { hold });
    const client = createClient({ store });
    const queued = await client.start(agent, 'never runs');
    expect(await client.cancel(queued.runId)).toBe('cancelled');
    await expect(client.result(queued.runId)).rejects.toMatchObject({ code: 'RUN_CANCELLED' });
    expect(await client.cancel(queued.runId)).toBe('finished');

    const running = await client.start(agent, 'runs until cancelled');
    const { worker, events } = startWorker(store, agent, 'w1', { leaseMs: 90, heartbeatMs: 30 });
    await worker.start();
    await hold.reached;
    expect(await client.cancel(running.runId)).toBe('requested');
    await until(() => events.some((e) => e.type === 'cancelled'));
    hold.open();
    expect((await client.get(running.runId))?.status).toBe('cancelled');
  });

  it('discards a finished run and refuses to discard a held one', async () => {
    const store = memoryStore();
    const hold = gate();
    const { agent } = orderAgent(store, { hold });
    const client = createClient({ store });
    const { runId } = await client.start(agent, 'go');
    const { worker } = startWorker(store, agent, 'w1');
    await worker.start();
    await hold.reached;
    await expect(client.discard(runId)).rejects.toBeInstanceOf(LeaseHeldError);
    hold.open();
    await client.result(runId, { pollMs: 10 });
    expect(await client.discard(runId)).toBe(true);
    expect(await client.get(runId)).toBeUndefined();
  });

  it('dead-letters a run whose holders keep dying, keeping the reason', async () => {
    const store = memoryStore();
    const { agent, effects } = orderAgent(store);
    const client = createClient({ store });
    const { runId } = await client.start(agent, 'go');
    // Three holders claim it and die without releasing; each later claim counts a recovery.
    for (const owner of ['dead-1', 'dead-2', 'dead-3']) {
      const lease = await store.acquire(runId, { owner, ttlMs: 1 });
      expect(lease).toBeDefined();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const { worker, events } = startWorker(store, agent, 'w1', { maxRecoveries: 2 });
    await worker.start();
    await until(() => events.some((e) => e.type === 'dead_lettered'));
    const run = await client.get(runId);
    expect(run).toMatchObject({
      status: 'dead_lettered',
      recoveries: 3,
      error: { code: 'RUN_DEAD_LETTERED' },
    });
    expect(effects).toEqual({});
    await expect(client.result(runId)).rejects.toMatchObject({ code: 'RUN_DEAD_LETTERED' });
  });

  it('takes back its own runs at once on restart with takeoverOnRestart', async () => {
    const store = memoryStore();
    const { agent } = orderAgent(store);
    const client = createClient({ store });
    const { runId } = await client.start(agent, 'go');
    await store.acquire(runId, { owner: 'stable-owner', ttlMs: 60_000 }); // the previous process died holding it
    const plain = startWorker(store, agent, 'stable-owner');
    await plain.worker.start();
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect((await client.get(runId))?.status).toBe('queued');
    await plain.worker.close();

    const restarted = startWorker(store, agent, 'stable-owner', { takeoverOnRestart: true });
    await restarted.worker.start();
    expect(await client.result(runId, { pollMs: 10 })).toBe('all steps done');
  });
});

describe('worker events', () => {
  it('report failed only for a run that failed: a refused claim leaves the run queued and says skipped', async () => {
    const inner = memoryStore();
    const { agent } = orderAgent(inner);
    // A store without batch claims, whose claim of one run is refused for a reason a retry would not fix (as a
    // transaction pooler's refusal is).
    let refusals = 0;
    const { claim: _batchClaims, ...withoutBatchClaims } = inner;
    const store: DurableStore = {
      ...withoutBatchClaims,
      async acquire() {
        refusals += 1;
        throw new CairnError('STORE_FAILED', 'refused by the pooler');
      },
    };
    const client = createClient({ store: inner });
    const { runId } = await client.start(agent, 'go');
    const { worker, events } = startWorker(store, agent, 'w1');
    await worker.start();
    await until(() => events.some((event) => event.type === 'failed' || event.type === 'skipped'));
    expect(refusals).toBeGreaterThan(0);
    expect(events.filter((event) => event.type === 'failed')).toEqual([]);
    expect(events.find((event) => event.type === 'skipped')).toMatchObject({
      runId,
      code: 'STORE_FAILED',
    });
    expect((await client.get(runId))?.status).toBe('queued');
    // Parked, not tried again in a loop.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(refusals).toBe(1);
  });
});
