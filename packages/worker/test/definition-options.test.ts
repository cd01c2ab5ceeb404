import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import {
  CairnError,
  defineAgent,
  defineTool,
  memoryStore,
  type DurableOptions,
  type DurableStore,
} from '@cairn/sdk';
import { createFakeClock, scriptedModel } from '@cairn/testing';
import { createClient, createWorker, type WorkerEvent, type WorkerOptions } from '@cairn/worker';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { gate, until } from './support.js';

// What a definition says applies to the runs a worker performs, unless the worker sets it (README: "Workers
// and definitions"). Issue 15, point 1: workers ignored every one of these.
const workers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.close()));
});

/** A one-trip agent whose tool waits on `hold` when given. */
function agentWith(
  durable: DurableOptions,
  extra: { hold?: ReturnType<typeof gate>; tracerProvider?: TracerProvider } = {},
) {
  const step = defineTool({
    name: 'step',
    description: 'Does one step.',
    input: z.object({}),
    execute: async () => {
      if (extra.hold !== undefined) {
        extra.hold.enter();
        await extra.hold.opened;
      }
      return 'stepped';
    },
  });
  return defineAgent({
    name: 'configured',
    model: scriptedModel([{ toolCalls: [{ id: 's1', name: 'step', args: {} }] }, { text: 'done' }]),
    tools: [step],
    durable,
    ...(extra.tracerProvider === undefined ? {} : { tracerProvider: extra.tracerProvider }),
  });
}

function start(
  store: DurableStore,
  agent: ReturnType<typeof agentWith>,
  extra: Partial<WorkerOptions> = {},
) {
  const events: WorkerEvent[] = [];
  const worker = createWorker({
    store,
    agents: [agent],
    pollMs: 10,
    shutdownSignals: [],
    onEvent: (event) => events.push(event),
    ...extra,
  });
  workers.push(worker);
  return { worker, events };
}

/** A store that records the ttl of every renewal, and fails saves retryably while `failSaves` is set. */
function observedStore(store: DurableStore) {
  const seen = { renewTtls: [] as number[], saves: 0, failSaves: false };
  const observed: DurableStore = {
    ...store,
    async renew(lease, ttlMs) {
      seen.renewTtls.push(ttlMs);
      return store.renew(lease, ttlMs);
    },
    async save(fence, checkpoint) {
      seen.saves += 1;
      if (seen.failSaves) throw new CairnError('STORE_UNAVAILABLE', 'down', { retryable: true });
      return store.save(fence, checkpoint);
    },
  };
  return { store: observed, seen };
}

describe('a definition performed by a worker', () => {
  it.each([
    ['the definition’s leaseMs, when the worker sets none', undefined, 90_000],
    ['the worker’s leaseMs, when it sets one', 45_000, 45_000],
  ])('renews its runs’ leases with %s', async (_case, workerLeaseMs, expected) => {
    const clock = createFakeClock();
    const inner = memoryStore({ clock });
    const { store, seen } = observedStore(inner);
    const hold = gate();
    const agent = agentWith({ store, clock, leaseMs: 90_000 }, { hold });
    const { runId } = await createClient({ store }).start(agent, 'go');
    const { worker } = start(store, agent, {
      clock,
      ...(workerLeaseMs === undefined ? {} : { leaseMs: workerLeaseMs }),
    });
    await worker.start();
    await hold.reached;
    // Past a third of either lease: the heartbeat renews.
    await clock.advance(31_000);
    await until(() => seen.renewTtls.length > 0);
    expect(seen.renewTtls[0]).toBe(expected);
    hold.open();
    expect(await createClient({ store }).result(runId, { pollMs: 0 })).toBe('done');
  });

  it('is deleted once it completes when the definition says deleteOnComplete', async () => {
    const store = memoryStore();
    const agent = agentWith({ store, deleteOnComplete: true });
    const client = createClient({ store });
    const { runId } = await client.start(agent, 'go');
    const { worker, events } = start(store, agent);
    await worker.start();
    await until(() => events.some((event) => event.type === 'completed'));
    await until(async () => (await client.get(runId)) === undefined);
    expect(await store.load(runId)).toBeUndefined();
  });

  it.each([
    ['the definition’s storeRetry (2 attempts, not the default 5)', undefined, 2],
    ['the fields the worker sets winning (3 attempts)', { maxAttempts: 3 }, 3],
  ])('retries its writes as %s', async (_case, workerRetry, attempts) => {
    const { store, seen } = observedStore(memoryStore());
    const agent = agentWith({
      store,
      storeRetry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 1 },
    });
    seen.failSaves = true;
    await createClient({ store }).start(agent, 'go');
    const { worker, events } = start(
      store,
      agent,
      workerRetry === undefined ? {} : { storeRetry: workerRetry },
    );
    await worker.start();
    await until(() => events.some((event) => event.type === 'suspended'));
    expect(seen.saves).toBe(attempts);
  });

  it('is traced by the definition’s tracer provider when the worker has none, and by the worker’s when it has one', async () => {
    const store = memoryStore();
    const definitionSpans = new InMemorySpanExporter();
    const workerSpans = new InMemorySpanExporter();
    const provider = (exporter: InMemorySpanExporter) =>
      new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const agent = agentWith({ store }, { tracerProvider: provider(definitionSpans) });
    const client = createClient({ store });

    const first = await client.start(agent, 'go');
    const plain = start(store, agent);
    await plain.worker.start();
    expect(await client.result(first.runId, { pollMs: 5 })).toBe('done');
    await plain.worker.close();
    expect(definitionSpans.getFinishedSpans().map((span) => span.name)).toContain('cairn.run');

    definitionSpans.reset();
    const second = await client.start(agent, 'again');
    const traced = start(store, agent, { tracerProvider: provider(workerSpans) });
    await traced.worker.start();
    expect(await client.result(second.runId, { pollMs: 5 })).toBe('done');
    expect(workerSpans.getFinishedSpans().map((span) => span.name)).toContain('cairn.run');
    expect(definitionSpans.getFinishedSpans()).toEqual([]);
  });
});

describe('the trace of a run a client started', () => {
  it('has one story: the first attempt is not resumed and stores its origin, a takeover links to it', async () => {
    const store = memoryStore();
    const spans = new InMemorySpanExporter();
    const tracerProvider = new TracerProvider({
      spanProcessors: [new SimpleSpanProcessor({ exporter: spans })],
    });
    const hold = gate();
    const agent = agentWith({ store }, { hold });
    const client = createClient({ store });
    const { runId } = await client.start(agent, 'go');
    const first = start(store, agent, { tracerProvider, leaseMs: 60_000 });
    await first.worker.start();
    await hold.reached;
    // The first worker hands the run over mid-tool; a second one continues it.
    const closing = first.worker.close();
    hold.open();
    await closing;
    const second = start(store, agent, { tracerProvider });
    await second.worker.start();
    expect(await client.result(runId, { pollMs: 5 })).toBe('done');

    const runs = spans.getFinishedSpans().filter((span) => span.name === 'cairn.run');
    expect(runs.map((span) => span.attributes['cairn.run.resumed'])).toEqual([false, true]);
    const [origin, resumed] = runs;
    expect(resumed!.links.map((link) => link.context.spanId)).toEqual([
      origin!.spanContext().spanId,
    ]);
  });
});
