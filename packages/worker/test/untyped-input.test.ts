import { defineAgent, memoryStore } from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { createClient, createWorker, type WorkerEvent } from '@cairn/worker';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from './support.js';

// Issue 16, point 10: untyped JavaScript passes what the types forbid; the input is checked where it enters.
const workers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.close()));
});

const greeter = () => defineAgent({ name: 'greeter', model: scriptedModel([{ text: 'hello' }]) });

describe('a run started with an input its definition cannot start from', () => {
  it('is refused by client.start with the definition: INVALID_ARGUMENT, no run', async () => {
    const store = memoryStore();
    const client = createClient({ store });
    await expect(client.start(greeter(), 42 as never, { runId: 'n' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(await client.get('n')).toBeUndefined();
  });

  it('started by name, ends failed with INVALID_ARGUMENT at its first attempt: once, not parked forever', async () => {
    const store = memoryStore();
    const client = createClient({ store });
    const { runId } = await client.start({ kind: 'agent', name: 'greeter' }, 42);
    const events: WorkerEvent[] = [];
    const worker = createWorker({
      store,
      agents: [greeter()],
      pollMs: 10,
      shutdownSignals: [],
      onEvent: (event) => events.push(event),
    });
    workers.push(worker);
    await worker.start();
    await expect(client.result(runId, { pollMs: 10, timeoutMs: 10_000 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect((await client.get(runId))?.status).toBe('failed');
    await until(() => events.some((event) => event.type === 'failed'));
    expect(
      events.filter((event) => 'runId' in event && event.runId === runId).map((e) => e.type),
    ).toEqual(['claimed', 'failed']);
  });
});
