import { agentSignals, memoryStore, type DurableStore, type ModelRequest } from '@cairn/sdk';
import { createFakeClock, type FakeClock } from '@cairn/testing';
import { createClient, createWorker, type WorkerEvent } from '@cairn/worker';
import { afterEach, describe, expect, it } from 'vitest';
import { refundAgent, until } from './support.js';

const workers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.close()));
});

/** Longer than any test: a worker with this poll only wakes by a notification or its wake-up timer. */
const neverPoll = 2 ** 31 - 1;

function startWorker(
  store: DurableStore,
  clock: FakeClock,
  agents: ReturnType<typeof refundAgent>['agent'][],
  extra: { concurrency?: number } = {},
) {
  const events: WorkerEvent[] = [];
  const worker = createWorker({
    store,
    agents,
    clock,
    leaseMs: 60_000,
    pollMs: neverPoll,
    shutdownSignals: [],
    onEvent: (event) => events.push(event),
    ...extra,
  });
  workers.push(worker);
  const types = (type: WorkerEvent['type']) => events.filter((e) => e.type === type);
  return { worker, events, types };
}

const userTexts = (request: ModelRequest) =>
  request.messages.flatMap((m) => (m.role === 'user' ? [m.content] : []));

describe('runs that wait for a time, on a worker that never polls', () => {
  it('does not start a scheduled run before its time, and starts it once the clock passes it', async () => {
    const clock = createFakeClock();
    const store = memoryStore({ clock });
    const client = createClient({ store });
    const { agent, model } = refundAgent(store, clock, { script: [{ text: 'started' }] });
    const startAt = new Date(clock.now() + 60_000);
    const started = await client.start(agent, 'later', { startAt });
    // Started by name too: the worker makes its initial state when the time comes.
    const byName = await client.start({ kind: 'agent', name: 'support' }, 'later too', { startAt });
    expect(started).toMatchObject({ created: true, status: 'waiting' });
    expect((await client.get(started.runId))?.waitingFor).toEqual({
      until: startAt.getTime(),
      signals: [],
      approvals: [],
      sleepingUntil: null,
    });

    const { worker, types } = startWorker(store, clock, [agent]);
    await worker.start();
    // The loop has made its pass and sleeps on its one timer.
    await until(() => clock.pendingTimers() === 1);
    await clock.advance(59_999);
    expect(types('claimed')).toEqual([]);
    expect(model.calls).toHaveLength(0);
    expect((await client.get(started.runId))?.status).toBe('waiting');
    expect((await client.get(byName.runId))?.status).toBe('waiting');

    await clock.advance(1);
    expect(await client.result(started.runId, { pollMs: 5 })).toBe('started');
    expect(await client.result(byName.runId, { pollMs: 5 })).toBe('started');
    expect(types('claimed')).toMatchObject([
      { runId: started.runId, status: 'waiting' },
      { runId: byName.runId, status: 'waiting' },
    ]);
    expect(model.calls).toHaveLength(2);
  });

  it('keeps timing the next sleeper when a due run it parked (drifted after a deploy) heads the wait index', async () => {
    const clock = createFakeClock();
    const store = memoryStore({ clock });
    const client = createClient({ store });
    const { agent } = refundAgent(store, clock, { script: [{ text: 'started' }] });
    // Written by an older version of the definition: due now, and parked by the worker for its drift.
    await store.create({
      runId: 'drifted',
      status: 'waiting',
      wait: { until: clock.now(), signals: [] },
      kind: 'agent',
      name: 'support',
      signature: 'an-older-version',
      snapshot: { format: 1, state: {}, pending: [], journalSeq: 0 },
    });
    const later = await client.start(agent, 'later', { startAt: new Date(clock.now() + 60_000) });

    const { worker, types } = startWorker(store, clock, [agent]);
    await worker.start();
    await until(() => types('skipped').length === 1 && clock.pendingTimers() === 1);
    expect(types('skipped')).toMatchObject([{ runId: 'drifted', code: 'AGENT_DRIFT' }]);
    await clock.advance(60_000);
    // Woken by its timer (this worker never polls), or not at all.
    for (let i = 0; i < 200 && (await client.get(later.runId))?.status !== 'completed'; i += 1)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect((await client.get(later.runId))?.status).toBe('completed');
  });

  it('decides wait times on the worker’s clock, not the store’s', async () => {
    // The store runs on the real clock, months past the fake one: on its own clock the start is long due.
    const clock = createFakeClock();
    const store = memoryStore();
    const client = createClient({ store });
    const { agent, model } = refundAgent(store, clock, { script: [{ text: 'started' }] });
    const { runId } = await client.start(agent, 'later', { startAt: clock.now() + 60_000 });
    const { worker, types } = startWorker(store, clock, [agent]);
    await worker.start();
    await until(() => clock.pendingTimers() === 1);
    expect(types('claimed')).toEqual([]);
    expect(model.calls).toHaveLength(0);
    await clock.advance(60_000);
    expect(await client.result(runId, { pollMs: 5 })).toBe('started');
  });

  it('wakes an agent that put itself to sleep on time, through the wake-up timer', async () => {
    const clock = createFakeClock();
    const store = memoryStore({ clock });
    const client = createClient({ store });
    const { agent, model } = refundAgent(store, clock, {
      script: [
        { toolCalls: [{ id: 'w1', name: 'wait_until', args: { seconds: 3600 } }] },
        { text: 'checked again' },
      ],
    });
    const { worker, types } = startWorker(store, clock, [agent]);
    await worker.start();
    const sleptAt = clock.now();
    const { runId } = await client.start(agent, 'check in an hour');
    await until(() => types('waiting').length === 1 && worker.active().length === 0);
    const wakeAt = sleptAt + 3_600_000;
    expect(types('waiting')).toEqual([
      { type: 'waiting', runId, until: wakeAt, signals: expect.any(Array) },
    ]);
    expect((await client.get(runId))?.waitingFor).toMatchObject({
      until: wakeAt,
      sleepingUntil: wakeAt,
    });
    await until(() => clock.pendingTimers() === 1);

    await clock.advance(3_599_999);
    expect(model.calls).toHaveLength(1);
    expect((await client.get(runId))?.status).toBe('waiting');
    await clock.advance(1);
    expect(await client.result(runId, { pollMs: 5 })).toBe('checked again');
    expect(types('claimed')).toHaveLength(2);
  });

  it('holds no lease and no slot for a waiting run: with concurrency 1 another run goes on', async () => {
    const clock = createFakeClock();
    const store = memoryStore({ clock });
    const client = createClient({ store });
    const waits = refundAgent(store, clock);
    const other = refundAgent(store, clock, { name: 'other', script: [{ text: 'other done' }] });
    const { worker, types } = startWorker(store, clock, [waits.agent, other.agent], {
      concurrency: 1,
    });
    await worker.start();
    const first = await client.start(waits.agent, 'Refund order o-1');
    await until(() => types('waiting').length === 1 && worker.active().length === 0);
    expect(await client.get(first.runId)).toMatchObject({
      status: 'waiting',
      owner: null,
      leaseUntil: null,
      held: false,
    });

    const second = await client.start(other.agent, 'meanwhile');
    expect(await client.result(second.runId, { pollMs: 5 })).toBe('other done');
    expect((await client.get(first.runId))?.status).toBe('waiting');

    const [pending] = (await client.get(first.runId))!.waitingFor!.approvals;
    await client.approve(first.runId, pending!.callId, { argsHash: pending!.argsHash });
    expect(await client.result(first.runId, { pollMs: 5 })).toBe('Refunded.');
  });
});

describe('starting with a signal', () => {
  it('creates the run and sends the signal once, however often the call is retried', async () => {
    const clock = createFakeClock();
    const store = memoryStore({ clock });
    const client = createClient({ store });
    const { agent } = refundAgent(store, clock, {
      script: (request) => ({ text: `read: ${userTexts(request).join(' | ')}` }),
    });
    const signal = {
      name: agentSignals.followUp,
      payload: { content: 'and a hotel' },
      idempotencyKey: 'msg-1',
    };
    const first = await client.start(agent, 'a flight', { idempotencyKey: 'trip-1', signal });
    const retried = await client.start(agent, 'a flight', { idempotencyKey: 'trip-1', signal });
    expect(first).toMatchObject({ created: true, signal: { seq: 1, duplicate: false } });
    expect(retried).toMatchObject({
      runId: first.runId,
      created: false,
      signal: { seq: 1, duplicate: true },
    });
    expect(await store.mailbox(first.runId)).toHaveLength(1);

    const { worker } = startWorker(store, clock, [agent]);
    await worker.start();
    const output = await client.result(first.runId, { pollMs: 5 });
    expect(output).toMatch(/and a hotel/);
    expect(String(output).split('and a hotel')).toHaveLength(2);
  });
});
