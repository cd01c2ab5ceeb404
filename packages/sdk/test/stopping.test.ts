import {
  cairnTracer,
  defaultStoreRetry,
  defineAgent,
  definePlanner,
  defineTool,
  CairnError,
  LeaseLostError,
  memoryStore,
  runDurable,
  RunSuspendedError,
  type Clock,
  type DurableDefinition,
  type DurableStore,
  type Model,
} from '@cairn/sdk';
import { createFakeClock, scriptedModel, type ScriptedTurn } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { gate, gatedTool, interceptWrites, ticks, unknownCalls } from './interleave.js';

/** One attempt through the runtime, as a worker makes it, with a hand-over signal (and a cancel one). */
function attempt<S, O>(
  definition: DurableDefinition<S, string, O>,
  store: DurableStore,
  clock: Clock,
  runId: string,
  handOver: AbortSignal,
  cancel?: AbortSignal,
) {
  return runDurable(definition, {
    ...(cancel === undefined ? {} : { signal: cancel }),
    store,
    runId,
    mode: 'execute',
    input: 'go',
    force: false,
    clock,
    owner: 'worker-1',
    leaseMs: 10_000,
    storeRetry: defaultStoreRetry,
    deleteOnComplete: false,
    tracer: cairnTracer(undefined),
    handOverSignal: handOver,
  });
}

describe('a hand-over (worker.close, SIGTERM)', () => {
  it('marks no tool started that it did not start, so the next holder runs it instead of reporting it unknown', async () => {
    const clock = createFakeClock();
    const store = memoryStore({ clock });
    const book = gatedTool('book');
    book.gateOf('p1').open();
    const modelGate = gate();
    const script = scriptedModel([
      { toolCalls: [{ id: 'p1', name: 'book', args: { value: 'x' } }] },
      { text: 'done' },
    ]);
    const model: Model = {
      name: script.name,
      provider: script.provider,
      async generate(request) {
        if (request.messages.length === 1) await modelGate.promise;
        return script.generate(request);
      },
    };
    const agent = () =>
      defineAgent({ name: 'booker', model, tools: [book.tool], durable: { store, clock } });
    const handOver = new AbortController();
    const first = attempt(agent().definition, store, clock, 'h', handOver.signal);
    await ticks();
    handOver.abort(); // the worker is told to shut down while the model call is in flight
    modelGate.open();
    await expect(first).rejects.toMatchObject({ code: 'RUN_RELEASED' });
    expect((await store.load('h'))?.run.owner).toBeNull();

    const resumed = await agent().resume('h');
    expect(unknownCalls(resumed.messages)).toEqual([]);
    expect(book.ran).toEqual({ p1: 1 });
  });

  it('writes every result that settled during it and starts no node after it (planner)', async () => {
    const clock = createFakeClock();
    const store = memoryStore({ clock });
    const pay = gatedTool('pay');
    const plan = {
      nodes: [
        { id: 'a', capability: 'pay', input: { value: 'A' }, dependsOn: [] },
        { id: 'b', capability: 'pay', input: { value: 'B' }, dependsOn: [] },
        { id: 'c', capability: 'pay', input: { value: 'C' }, dependsOn: ['b'] },
      ],
    };
    const planner = () =>
      definePlanner({
        name: 'payer',
        model: scriptedModel([{ text: JSON.stringify(plan) }]),
        capabilities: [{ name: 'pay', description: 'Pays.', executable: pay.tool }],
        durable: { store, clock },
      });
    const handOver = new AbortController();
    const first = attempt(planner().definition, store, clock, 'hp', handOver.signal);
    await ticks();
    handOver.abort();
    pay.gateOf('b').open(); // b settles during the hand-over, while a still runs
    await ticks();
    pay.gateOf('a').open(); // a settles last
    await expect(first).rejects.toMatchObject({ code: 'RUN_RELEASED' });
    expect(pay.ran).toEqual({ a: 1, b: 1 });

    pay.gateOf('c').open();
    const resumed = await planner().resume('hp');
    expect(resumed.nodes.map((n) => [n.id, n.status])).toEqual([
      ['b', 'completed'],
      ['a', 'completed'],
      ['c', 'completed'],
    ]);
    expect(pay.ran).toEqual({ a: 1, b: 1, c: 1 });
  });
});

describe('a planner that stops mid-wave', () => {
  it('keeps its lease until the nodes still running have settled, and journals them', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const inner = memoryStore({ clock });
    const pay = gatedTool('pay');
    pay.gateOf('a').open();
    const plan = {
      nodes: [
        { id: 'a', capability: 'pay', input: { value: 'A' }, dependsOn: [] },
        { id: 'charge', capability: 'pay', input: { value: 'C' }, dependsOn: [] },
      ],
    };
    let saves = 0;
    let storeDown = true;
    const failed = gate();
    let releasedWhileCharging = false;
    const intercepted = interceptWrites(inner, (kind) => {
      if (kind !== 'save') return;
      saves += 1;
      // The checkpoint after `a` settled fails for good: the run is suspended while `charge` runs.
      if (saves === 3 && storeDown) {
        failed.open();
        throw new CairnError('STORE_FAILED', 'disk full');
      }
    });
    const store: DurableStore = {
      ...intercepted,
      release: async (lease) => {
        if (pay.ran.charge === undefined) releasedWhileCharging = true;
        return inner.release(lease);
      },
    };
    const planner = () =>
      definePlanner({
        name: 'payer',
        model: scriptedModel([{ text: JSON.stringify(plan) }]),
        capabilities: [{ name: 'pay', description: 'Pays.', executable: pay.tool }],
        durable: { store, clock },
      });
    const first = planner().execute('pay', { runId: 'mw' });
    first.catch(() => undefined);
    await failed.promise;
    await ticks();
    pay.gateOf('charge').open();
    await expect(first).rejects.toBeInstanceOf(RunSuspendedError);
    expect(releasedWhileCharging).toBe(false);

    storeDown = false;
    const resumed = await planner().resume('mw');
    expect(resumed.nodes.map((n) => [n.id, n.status]).sort()).toEqual([
      ['a', 'completed'],
      ['charge', 'completed'],
    ]);
    expect(pay.ran).toEqual({ a: 1, charge: 1 });
  });
});

describe('a cancelled attempt whose write is then refused by the fence', () => {
  it('writes nothing more, and ends LEASE_LOST: the run is the new holder’s to end', async () => {
    const clock = createFakeClock();
    const store = memoryStore({ clock });
    const pay = gatedTool('pay');
    const model = scriptedModel([
      {
        toolCalls: [
          { id: 'p1', name: 'pay', args: { value: 'a' } },
          { id: 'p2', name: 'pay', args: { value: 'b' } },
        ],
      },
      { text: 'done' },
    ]);
    const cancel = new AbortController();
    const afterRefusal: string[] = [];
    let refused = false;
    const intercepted = interceptWrites(store, (kind, args) => {
      if (refused) {
        afterRefusal.push(kind);
        return;
      }
      const entries = kind === 'append' ? (args[1] as Array<{ type: string }>) : [];
      if (entries.some((entry) => entry.type === 'settled')) {
        // p1 settled while p2 runs: as its result is being written, a client cancels the run and another
        // holder takes it over, so the write is refused.
        cancel.abort(new Error('user cancelled'));
        refused = true;
        throw new LeaseLostError('c', 1, 'another holder claimed it');
      }
    });
    const agent = defineAgent({
      name: 'payer',
      model,
      tools: [pay.tool],
      durable: { store, clock },
    });
    const run = attempt(
      agent.definition,
      intercepted,
      clock,
      'c',
      new AbortController().signal,
      cancel.signal,
    ).catch((error: unknown) => error);
    await ticks();
    pay.gateOf('p1').open();
    await ticks();
    pay.gateOf('p2').open();
    expect(await run).toMatchObject({ code: 'LEASE_LOST' });
    expect(refused).toBe(true);
    // No checkpoint and no cancelled status after the refusal: the holder knows it lost the run.
    expect(afterRefusal).toEqual([]);
  });
});

describe('an event-loop stall longer than the lease', () => {
  it('starts no effect once the lease ran out on the local clock, before any renewal could tell', async () => {
    const fake = createFakeClock();
    let stall = 0;
    const clock: Clock = {
      now: () => fake.now() + stall,
      sleep: (ms, signal) => fake.sleep(ms, signal),
      setTimer: (ms, callback) => fake.setTimer(ms, callback),
    };
    const store = memoryStore({ clock: fake });
    const script: ScriptedTurn[] = [
      { toolCalls: [{ id: 's1', name: 'stall', args: { value: 'x' } }] },
      { text: 'done' },
    ];
    const model = scriptedModel(script);
    const stallTool = defineTool({
      name: 'stall',
      description: 'Blocks the event loop.',
      input: z.object({ value: z.string() }),
      idempotent: true,
      execute: () => {
        stall += 20_000; // the process froze for twice the lease; no timer fired meanwhile
        return 'ok';
      },
    });
    const agent = defineAgent({
      name: 'staller',
      model,
      tools: [stallTool],
      durable: { store, clock, leaseMs: 10_000 },
    });
    await expect(agent.execute('go', { runId: 'st' })).rejects.toBeInstanceOf(LeaseLostError);
    expect(model.calls).toHaveLength(1);
  });
});
