import {
  CairnError,
  childRunId,
  memoryStore,
  reservedRunIdPrefix,
  type DurableStore,
} from '@cairn/sdk';
import { createClient, createWorker } from '@cairn/worker';
import { describe, expect, it } from 'vitest';
import { orderAgent } from './support.js';

/** A store whose loads fail with a retryable STORE_UNAVAILABLE while `down` is set, as one restarting would. */
function restartingStore(store: DurableStore) {
  const state = { down: false, refused: 0 };
  const flaky: DurableStore = {
    ...store,
    async load(runId) {
      if (state.down) {
        state.refused += 1;
        throw new CairnError('STORE_UNAVAILABLE', 'connection refused', { retryable: true });
      }
      return store.load(runId);
    },
  };
  return { store: flaky, state };
}

describe('client.result', () => {
  it('waits through a store that is down for a while, then returns the output', async () => {
    const inner = memoryStore();
    const { store, state } = restartingStore(inner);
    const { agent } = orderAgent(inner);
    const client = createClient({ store });
    const { runId } = await client.start(agent, 'go');
    state.down = true;
    const waiting = client.result(runId, { pollMs: 5 });
    const worker = createWorker({ store: inner, agents: [agent], shutdownSignals: [] });
    await worker.start();
    // The server comes back after a few refused polls; the run completed meanwhile.
    while (state.refused < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    state.down = false;
    expect(await waiting).toBe('all steps done');
    await worker.close();
  });

  it('gives up at its timeout with RESULT_TIMEOUT, naming the status and keeping the store error it saw', async () => {
    const inner = memoryStore();
    const { store, state } = restartingStore(inner);
    const { agent } = orderAgent(inner);
    const client = createClient({ store });
    const { runId } = await client.start(agent, 'go');
    await expect(client.result(runId, { pollMs: 5, timeoutMs: 30 })).rejects.toMatchObject({
      code: 'RESULT_TIMEOUT',
      retryable: true,
      data: { runId, status: 'queued' },
    });
    state.down = true;
    const error = await client.result(runId, { pollMs: 5, timeoutMs: 30 }).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'RESULT_TIMEOUT',
      data: { runId, storeError: 'STORE_UNAVAILABLE' },
    });
    expect((error as CairnError).cause).toMatchObject({ code: 'STORE_UNAVAILABLE' });
  });

  it('fails at once on an error a retry would not fix', async () => {
    const client = createClient({ store: memoryStore() });
    await expect(client.result('nobody')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
  });
});

describe('client.start by kind and name', () => {
  it('needs no definition in the client; the worker that has it starts the run from the input', async () => {
    const store = memoryStore();
    const { agent, effects, model } = orderAgent(store);
    const client = createClient({ store });
    const started = await client.start({ kind: 'agent', name: 'orders' }, 'place the order', {
      idempotencyKey: 'by-name-1',
    });
    expect(started).toMatchObject({ created: true, status: 'queued' });
    const worker = createWorker({ store, agents: [agent], shutdownSignals: [], pollMs: 10 });
    await worker.start();
    expect(await client.result(started.runId, { pollMs: 5 })).toBe('all steps done');
    await worker.close();
    expect(effects).toEqual({ s1: 1, s2: 1 });
    expect(model.calls[0]?.messages).toEqual([{ role: 'user', content: 'place the order' }]);
    // The first checkpoint wrote the definition's signature: drift is caught from then on.
    expect((await store.load(started.runId))?.run.signature).toBe(agent.signature);
    const again = await client.start({ kind: 'agent', name: 'orders' }, 'place the order', {
      idempotencyKey: 'by-name-1',
    });
    expect(again).toEqual({ runId: started.runId, created: false, status: 'completed' });
  });

  it('an input the definition cannot start from ends the run failed with INVALID_ARGUMENT at the worker', async () => {
    // Issue 16, point 10: it was parked as SNAPSHOT_INVALID, 60 s at a time, forever.
    const store = memoryStore();
    const { agent } = orderAgent(store);
    const client = createClient({ store });
    const { runId } = await client.start({ kind: 'agent', name: 'orders' }, { not: 'a prompt' });
    const worker = createWorker({ store, agents: [agent], shutdownSignals: [], pollMs: 10 });
    await worker.start();
    await expect(client.result(runId, { pollMs: 5, timeoutMs: 10_000 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      data: { input: true },
    });
    await worker.close();
    expect((await client.get(runId))?.status).toBe('failed');
  });

  it('refuses an input that is not JSON with INVALID_ARGUMENT', async () => {
    const client = createClient({ store: memoryStore() });
    await expect(
      client.start({ kind: 'agent', name: 'orders' }, 1n as never),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('a client given a run id no store can keep', () => {
  it('refuses it with INVALID_ARGUMENT on every call, a too-long idempotency key too', async () => {
    const store = memoryStore();
    const { agent } = orderAgent(store);
    const client = createClient({ store });
    const bad = 'half-\ud800-emoji';
    await expect(client.start(agent, 'go', { runId: bad })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(
      client.start(agent, 'go', { idempotencyKey: 'k'.repeat(300) }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    for (const call of [
      () => client.get(bad),
      () => client.result(bad),
      () => client.cancel(bad),
      () => client.discard(bad),
    ])
      await expect(call()).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await store.list()).toEqual([]);
  });
});

describe('a client given a run id in the namespace of child runs', () => {
  it('refuses to start a run there with INVALID_ARGUMENT, and stores nothing', async () => {
    const store = memoryStore();
    const { agent } = orderAgent(store);
    const client = createClient({ store });
    await expect(
      client.start(agent, 'go', { runId: childRunId('victim', 'hotel') }),
    ).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/reserved/),
    });
    await expect(
      client.start({ kind: 'agent', name: 'orders' }, 'go', { runId: `${reservedRunIdPrefix}x` }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await client.get(childRunId('victim', 'hotel'))).toBeUndefined();
    expect(await store.list()).toEqual([]);
  });
});
