import { CairnError, memoryStore, type DurableStore, type RunStatus } from '@cairn/sdk';
import { createClient, createWorker, type WorkerEvent } from '@cairn/worker';
import { afterEach, describe, expect, it } from 'vitest';
import { gate, orderAgent, until } from './support.js';

// Issue 15, point 3, through a worker: whatever stops a run early (a store outage, a lost lease, a cancel
// while writes wait to be retried), every event names it with a Cairn code, never UNKNOWN, and `failed` is
// said only of a run whose stored status is failed.
const workers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.close()));
});

type Operation = 'save' | 'append' | 'renew';

/** A store whose chosen operations fail retryably, as a restarting server's do, while `down` holds them. */
function outageStore(store: DurableStore) {
  const down = new Set<Operation>();
  const guard =
    <Args extends unknown[], Result>(name: Operation, call: (...args: Args) => Promise<Result>) =>
    async (...args: Args): Promise<Result> => {
      if (down.has(name)) {
        throw new CairnError('STORE_UNAVAILABLE', `${name}: connection refused`, {
          retryable: true,
        });
      }
      return call(...args);
    };
  const flaky: DurableStore = {
    ...store,
    save: guard('save', store.save.bind(store)),
    append: guard('append', store.append.bind(store)),
    renew: guard('renew', store.renew.bind(store)),
  };
  return { store: flaky, down };
}

async function scenario(
  drive: (context: {
    down: Set<Operation>;
    runId: string;
    events: WorkerEvent[];
    cancel(): Promise<unknown>;
  }) => Promise<void>,
): Promise<{ status: RunStatus | undefined; events: WorkerEvent[] }> {
  const { store, down } = outageStore(memoryStore());
  const hold = gate();
  const { agent } = orderAgent(store, { hold });
  const client = createClient({ store });
  const { runId } = await client.start(agent, 'go');
  const events: WorkerEvent[] = [];
  const worker = createWorker({
    store,
    agents: [agent],
    pollMs: 10,
    leaseMs: 300,
    heartbeatMs: 50,
    storeRetry: { maxAttempts: 40, initialDelayMs: 10, maxDelayMs: 20 },
    shutdownSignals: [],
    onEvent: (event) => events.push(event),
  });
  workers.push(worker);
  await worker.start();
  await hold.reached;
  const driving = drive({ down, runId, events, cancel: () => client.cancel(runId) });
  hold.open();
  await driving;
  down.clear();
  const ended = ['completed', 'cancelled', 'failed', 'dead_lettered'];
  // Until the run ends, or the worker says something this file refuses (it would then park the run).
  await until(
    async () =>
      ended.includes((await client.get(runId))?.status ?? '') ||
      events.some((event) => event.type === 'failed' || unknown(event)),
  );
  await worker.close();
  return { status: (await client.get(runId))?.status, events };
}

/** Whether the worker said how its first attempt ended. */
const attemptEnded = (events: WorkerEvent[]) =>
  events.some((event) => event.type !== 'started' && event.type !== 'claimed');

const unknown = (event: WorkerEvent) => 'code' in event && event.code === 'UNKNOWN';

function expectNamedEvents(events: WorkerEvent[], status: RunStatus | undefined): void {
  expect(events.filter(unknown)).toEqual([]);
  if (status !== 'failed') expect(events.filter((event) => event.type === 'failed')).toEqual([]);
}

describe('a worker names what stopped a run early, with a Cairn code', () => {
  it('a store outage while a tool runs (renewals fail, the lease is given up): the run completes', async () => {
    const { status, events } = await scenario(async ({ down, events: seen }) => {
      for (const operation of ['save', 'append', 'renew'] as const) down.add(operation);
      await until(() => attemptEnded(seen));
    });
    expectNamedEvents(events, status);
    expect(status).toBe('completed');
    expect(events.map((event) => event.type)).toContain('lease_lost');
    expect(events.filter((event) => event.type === 'completed')).toHaveLength(1);
  });

  it('a lease lost (renewals refused) while its checkpoint waits to be retried: the run completes', async () => {
    const { status, events } = await scenario(async ({ down, events: seen }) => {
      down.add('save');
      down.add('renew');
      await until(() => attemptEnded(seen));
    });
    expectNamedEvents(events, status);
    expect(status).toBe('completed');
    expect(events.map((event) => event.type)).toContain('lease_lost');
  });

  it('a cancel while its checkpoint waits to be retried: said cancelled, not failed', async () => {
    const { status, events } = await scenario(async ({ down, cancel, events: seen }) => {
      down.add('save');
      await cancel();
      // The heartbeat delivers the cancel while the checkpoint is in its backoff; then the store comes back.
      await until(() => attemptEnded(seen));
    });
    expectNamedEvents(events, status);
    expect(status).toBe('cancelled');
    expect(events.map((event) => event.type)).toContain('cancelled');
  });
});
