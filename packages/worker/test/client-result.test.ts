import { CairnError, memoryStore, type DurableStore } from '@cairn/sdk';
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
