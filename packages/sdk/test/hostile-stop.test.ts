import {
  cairnTracer,
  defaultStoreRetry,
  childRunId,
  defineAgent,
  definePlanner,
  LeaseLostError,
  memoryStore,
  runDurable,
  type DurableStore,
} from '@cairn/sdk';
import { createFakeClock, scriptedModel, type FakeClock } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { stallingTool, standing, ticks, unknownCalls } from './interleave.js';

/** An agent whose one tool call ignores its signal (its timeout, 60 s by default, is far off). */
function world(
  options: { timeoutMs?: number; store?: (inner: DurableStore) => DurableStore } = {},
) {
  const clock = createFakeClock();
  const inner = memoryStore({ clock });
  const store = options.store?.(inner) ?? inner;
  const pay = stallingTool(
    'pay',
    options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs },
  );
  const model = scriptedModel([
    { toolCalls: [{ id: 'p1', name: 'pay', args: { value: 'x' } }] },
    { text: 'done' },
  ]);
  const agent = () =>
    defineAgent({
      name: 'payer',
      model,
      tools: [pay.tool],
      durable: { store, clock, leaseMs: 3_000 },
    });
  return { clock, store, pay, model, agent };
}

/** Past the grace a stopping run gives in-flight effects after their signal aborted. */
async function pastAbortGrace(clock: FakeClock): Promise<void> {
  await clock.advance(1_000);
}

describe('a run stopping while a tool ignores its signal', () => {
  it('ends cancelled a short grace after its signal aborts, without waiting for the tool', async () => {
    const { clock, store, pay, agent } = world();
    const cancel = new AbortController();
    const run = agent().execute('go', { runId: 'c', signal: cancel.signal });
    run.catch(() => undefined);
    await ticks();
    cancel.abort(new Error('user cancelled'));
    await pastAbortGrace(clock);
    const ended = await standing(run);
    expect(ended).toMatchObject({ error: { code: 'RUN_CANCELLED' } });
    expect(pay.signals.p1?.[0]?.aborted).toBe(true);
    expect((await store.load('c'))?.run).toMatchObject({ status: 'cancelled', owner: null });
    // The tool ends later: nothing of it is written.
    pay.gateOf('p1').open();
    await ticks();
    expect(JSON.stringify(await store.load('c'))).not.toContain('late');
  });

  it('ends LEASE_LOST a short grace after its lease is lost, without waiting for the tool', async () => {
    const { clock, pay, agent } = world({
      store: (inner) => ({
        ...inner,
        renew: async (lease) => {
          throw new LeaseLostError(lease.runId, lease.epoch, 'another holder claimed it');
        },
      }),
    });
    const run = agent().execute('go', { runId: 'l' });
    run.catch(() => undefined);
    await ticks();
    await clock.advance(1_000); // the first renewal fails: the lease is lost
    await pastAbortGrace(clock);
    expect(await standing(run)).toMatchObject({ error: { code: 'LEASE_LOST' } });
    expect(pay.signals.p1?.[0]?.aborted).toBe(true);
  });

  it('is handed over once the tool’s timeout abandons it; the next holder tells the model outcome unknown', async () => {
    const { clock, store, pay, model, agent } = world({ timeoutMs: 5_000 });
    const handOver = new AbortController();
    const run = runDurable(agent().definition, {
      store,
      runId: 'h',
      mode: 'execute',
      input: 'go',
      force: false,
      clock,
      owner: 'worker-1',
      leaseMs: 3_000,
      storeRetry: defaultStoreRetry,
      deleteOnComplete: false,
      tracer: cairnTracer(undefined),
      handOverSignal: handOver.signal,
    });
    run.catch(() => undefined);
    await ticks();
    handOver.abort(); // the worker shuts down: in-flight effects may finish, up to their timeout
    await clock.advance(5_000);
    expect(await standing(run)).toMatchObject({ error: { code: 'RUN_RELEASED' } });
    expect((await store.load('h'))?.run).toMatchObject({ status: 'running', owner: null });

    const resumed = await agent().resume('h');
    expect(unknownCalls(resumed.messages)).toEqual(['p1']);
    // Recorded by the holder that abandoned it, with why: the next holder did not have to guess.
    expect(JSON.stringify(resumed.messages)).toContain('5000 ms timeout');
    expect(model.calls).toHaveLength(2);
    pay.gateOf('p1').open();
    await ticks();
    expect(pay.tries).toEqual({ p1: 1 });
    expect(JSON.stringify(await store.load('h'))).not.toContain('late');
  });

  it('ends cancelled a short grace after the cancel when the tool is in a planner’s child agent', async () => {
    const writes: string[] = [];
    const { clock, store, pay, agent } = world({
      store: (inner) => ({
        ...inner,
        updateStatus: async (fence, update) => {
          await inner.updateStatus(fence, update);
          writes.push(`${fence.runId} ${update.status}`);
        },
        release: async (lease) => {
          writes.push(`${lease.runId} released`);
          return inner.release(lease);
        },
      }),
    });
    const planner = definePlanner({
      name: 'boss',
      model: scriptedModel([
        {
          text: JSON.stringify({
            nodes: [{ id: 'n', capability: 'payer', input: 'pay', dependsOn: [] }],
          }),
        },
      ]),
      capabilities: [{ name: 'payer', description: 'Pays.', executable: agent() }],
      durable: { store, clock, leaseMs: 3_000 },
    });
    const cancel = new AbortController();
    const run = planner.execute('pay', { runId: 'b', signal: cancel.signal });
    run.catch(() => undefined);
    await ticks(10);
    expect(pay.tries).toEqual({ p1: 1 });
    cancel.abort(new Error('user cancelled'));
    await pastAbortGrace(clock);
    expect(await standing(run)).toMatchObject({ error: { code: 'RUN_CANCELLED' } });
    // The node is not abandoned while its child run stops (it runs under the planner's lease): the child
    // ends cancelled before its parent ends and gives the lease up.
    expect(writes).toEqual([`${childRunId('b', 'n')} cancelled`, 'b cancelled', 'b released']);
  });
});
