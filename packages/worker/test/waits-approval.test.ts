import { agentSignals, CairnError, memoryStore, type DurableStore } from '@cairn/sdk';
import { createFakeClock, type FakeClock } from '@cairn/testing';
import { createClient, createWorker, type WorkerEvent } from '@cairn/worker';
import { afterEach, describe, expect, it } from 'vitest';
import { refundAgent, until } from './support.js';

const workers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.close()));
});

/**
 * A worker on a fake clock that never moves in these tests: its poll never fires, so every wake-up it gets
 * comes from the store's notifications.
 */
function startWorker(
  store: DurableStore,
  clock: FakeClock,
  agents: ReturnType<typeof refundAgent>['agent'][],
  owner: string,
) {
  const events: WorkerEvent[] = [];
  const worker = createWorker({
    store,
    agents,
    clock,
    owner,
    leaseMs: 60_000,
    pollMs: 1_000,
    shutdownSignals: [],
    onEvent: (event) => events.push(event),
  });
  workers.push(worker);
  const types = (type: WorkerEvent['type']) => events.filter((e) => e.type === type);
  return { worker, events, types };
}

function setup() {
  const clock = createFakeClock();
  const store = memoryStore({ clock });
  // The client polls `result` on the real clock; nothing it checks here depends on time.
  const client = createClient({ store });
  return { clock, store, client };
}

describe('a run that waits for approval, through a worker and a client', () => {
  it('waits holding nothing, is listed with what it waits for, and completes once approved', async () => {
    const { clock, store, client } = setup();
    const { agent, refunds, model } = refundAgent(store, clock);
    const { worker, types } = startWorker(store, clock, [agent], 'w1');
    await worker.start();
    const { runId } = await client.start(agent, 'Refund order o-1', { idempotencyKey: 't-1' });

    await until(() => types('waiting').length === 1 && worker.active().length === 0);
    expect(types('waiting')).toEqual([
      {
        type: 'waiting',
        runId,
        until: null,
        signals: expect.arrayContaining([agentSignals.approval]),
      },
    ]);
    expect(refunds).toEqual([]);
    const listed = await client.list({ status: 'waiting' });
    expect(listed).toHaveLength(1);
    const [waiting] = listed;
    expect(waiting).toMatchObject({ runId, status: 'waiting', owner: null, held: false });
    expect(waiting!.wait?.signals).toContain(agentSignals.approval);
    expect(waiting!.waitingFor).toMatchObject({
      until: null,
      sleepingUntil: null,
      approvals: [{ callId: 'c-refund', tool: 'refund', args: { order: 'o-1' }, deadline: null }],
    });
    expect((await client.get(runId))?.waitingFor).toEqual(waiting!.waitingFor);

    const { argsHash } = waiting!.waitingFor!.approvals[0]!;
    await expect(client.approve(runId, 'c-refund', { argsHash, by: 'ana' })).resolves.toEqual({
      seq: 1,
      duplicate: false,
      decision: { callId: 'c-refund', approved: true, argsHash, by: 'ana' },
    });
    expect(await client.result(runId, { pollMs: 5 })).toBe('Refunded.');
    expect(refunds).toEqual([`${runId}:o-1`]);
    expect(model.calls).toHaveLength(2);
    expect(types('claimed')).toHaveLength(2);
    expect(types('completed')).toEqual([{ type: 'completed', runId }]);
    expect(await client.get(runId)).toMatchObject({ status: 'completed', waitingFor: null });
  });

  it('delivers an approval sent while no worker runs when a worker starts', async () => {
    const { clock, store, client } = setup();
    const { agent, refunds } = refundAgent(store, clock);
    const first = startWorker(store, clock, [agent], 'w1');
    await first.worker.start();
    const { runId } = await client.start(agent, 'Refund order o-1');
    await until(() => first.types('waiting').length === 1);
    await first.worker.close();

    const [pending] = (await client.get(runId))!.waitingFor!.approvals;
    await client.approve(runId, pending!.callId, { argsHash: pending!.argsHash });
    expect((await client.get(runId))?.status).toBe('waiting');
    expect(refunds).toEqual([]);

    const second = startWorker(store, clock, [agent], 'w2');
    await second.worker.start();
    expect(await client.result(runId, { pollMs: 5 })).toBe('Refunded.');
    expect(refunds).toEqual([`${runId}:o-1`]);
    expect(second.types('completed')).toHaveLength(1);
  });

  it('never runs a rejected call; the model reads the reason', async () => {
    const { clock, store, client } = setup();
    const { agent, refunds, model } = refundAgent(store, clock);
    const { worker, types } = startWorker(store, clock, [agent], 'w1');
    await worker.start();
    const { runId } = await client.start(agent, 'Refund order o-1');
    await until(() => types('waiting').length === 1);
    await client.reject(runId, 'c-refund', { reason: 'not this customer', by: 'ana' });
    expect(await client.result(runId, { pollMs: 5 })).toBe('Refunded.');
    expect(refunds).toEqual([]);
    expect(model.calls[1]!.messages.find((m) => m.role === 'tool')).toMatchObject({
      content: { error: 'TOOL_REJECTED', message: expect.stringContaining('not this customer') },
    });
  });

  it('acts once on two approvals of one call sent at once: the tool runs once', async () => {
    const { clock, store, client } = setup();
    const { agent, refunds } = refundAgent(store, clock);
    const { worker, types } = startWorker(store, clock, [agent], 'w1');
    await worker.start();
    const { runId } = await client.start(agent, 'Refund order o-1');
    await until(() => types('waiting').length === 1);
    const [pending] = (await client.get(runId))!.waitingFor!.approvals;
    const receipts = await Promise.all([
      client.approve(runId, 'c-refund', { argsHash: pending!.argsHash, by: 'ana' }),
      client.approve(runId, 'c-refund', { argsHash: pending!.argsHash, by: 'bo' }),
    ]);
    expect(receipts.map((r) => r.duplicate).sort()).toEqual([false, true]);
    expect(receipts[0]!.seq).toBe(receipts[1]!.seq);
    expect(await client.result(runId, { pollMs: 5 })).toBe('Refunded.');
    // A click after the run went on (and ended): the same receipt, naming the decision that stands.
    const standing = receipts.find((r) => !r.duplicate)!;
    await expect(
      client.approve(runId, 'c-refund', { argsHash: pending!.argsHash }),
    ).resolves.toEqual({ ...standing, duplicate: true });
    expect(refunds).toEqual([`${runId}:o-1`]);
  });

  it('receives a steer sent before the wait began, without waiting', async () => {
    const { clock, store, client } = setup();
    let steered = false;
    const { agent } = refundAgent(store, clock, {
      // The steer lands while the model writes its first answer: after the trip began, before the wait.
      beforeGenerate: async () => {
        if (steered) return;
        steered = true;
        await client.steer('r-steer', 'no need to wait');
      },
      script: (request, turn) => {
        if (turn === 0) {
          return { toolCalls: [{ id: 'w1', name: 'wait_until', args: { seconds: 3600 } }] };
        }
        const texts = request.messages.flatMap((m) => (m.role === 'user' ? [m.content] : []));
        return { text: `read: ${texts.join(' | ')}` };
      },
    });
    const { worker, types } = startWorker(store, clock, [agent], 'w1');
    await worker.start();
    const { runId } = await client.start(agent, 'check later', { runId: 'r-steer' });
    expect(await client.result(runId, { pollMs: 5 })).toBe('read: check later | no need to wait');
    expect(types('waiting')).toEqual([]);
  });

  it('cancels a waiting run: at once with no worker running, else the worker it wakes cancels it', async () => {
    const { clock, store, client } = setup();
    const { agent, refunds } = refundAgent(store, clock);
    const { worker, types } = startWorker(store, clock, [agent], 'w1');
    await worker.start();
    const alone = await client.start(agent, 'Refund order o-1');
    const withWorker = await client.start(agent, 'Refund order o-2');
    await until(() => types('waiting').length === 2 && worker.active().length === 0);

    // The cancel wakes the worker, which claims the run and ends it cancelled (or the client gets there first).
    expect(['cancelled', 'requested']).toContain(await client.cancel(withWorker.runId));
    const cancelled = (e: unknown) => e instanceof CairnError && e.code === 'RUN_CANCELLED';
    await expect(client.result(withWorker.runId, { pollMs: 5 })).rejects.toSatisfy(cancelled);

    await worker.close();
    expect(await client.cancel(alone.runId)).toBe('cancelled');
    await expect(client.result(alone.runId, { pollMs: 5 })).rejects.toSatisfy(cancelled);
    expect(await client.get(alone.runId)).toMatchObject({ status: 'cancelled', waitingFor: null });
    expect(refunds).toEqual([]);
  });

  it('passes the store’s typed errors through signal', async () => {
    const { clock, store, client } = setup();
    const { agent } = refundAgent(store, clock, { script: [{ text: 'done' }] });
    const code = (code: string) => (e: unknown) => e instanceof CairnError && e.code === code;
    await expect(client.signal('nobody', 'ping', null)).rejects.toSatisfy(code('RUN_NOT_FOUND'));
    const { worker } = startWorker(store, clock, [agent], 'w1');
    await worker.start();
    const { runId } = await client.start(agent, 'hi');
    expect(await client.result(runId, { pollMs: 5 })).toBe('done');
    await expect(client.signal(runId, 'ping', null)).rejects.toSatisfy(code('RUN_ENDED'));
    await expect(client.followUp(runId, 'and?')).rejects.toSatisfy(code('RUN_ENDED'));
    const { runId: other } = await client.start(agent, 'hi', { startAt: clock.now() + 60_000 });
    await expect(client.signal(other, '', null)).rejects.toSatisfy(code('INVALID_ARGUMENT'));
    await expect(
      client.start(agent, 'hi', { runId: 'r-bad-time', startAt: new Date('not a date') }),
    ).rejects.toSatisfy(code('INVALID_ARGUMENT'));
    expect(await client.get('r-bad-time')).toBeUndefined();
  });
});
