import {
  defineAgent,
  definePlanner,
  memoryStore,
  type Model,
  type ModelRequest,
  type Usage,
} from '@cairn/sdk';
import { createFakeClock, scriptedModel, SimulatedCrash, type ScriptedTurn } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { gate, gatedTool, interceptWrites, ticks, unknownCalls } from './interleave.js';

describe('settled marks written while another write is in flight', () => {
  it('are never dropped by an append that was already on its way (agent, three tools settling apart)', async () => {
    const clock = createFakeClock();
    const inner = memoryStore({ clock });
    const book = gatedTool('book');
    const calls = ['t0', 't1', 't2'];
    const script: ScriptedTurn[] = [
      { toolCalls: calls.map((id) => ({ id, name: 'book', args: { value: id } })) },
      { text: 'done' },
    ];
    let appends = 0;
    const held = gate();
    const holding = gate();
    const store = interceptWrites(inner, async (kind) => {
      if (kind !== 'append') return;
      appends += 1;
      // The second append is t0's settled mark: hold it in flight while t1 settles.
      if (appends === 2) {
        holding.open();
        await held.promise;
      }
    });
    const make = () =>
      defineAgent({
        name: 'booker',
        model: scriptedModel(script),
        tools: [book.tool],
        durable: { store, clock },
      });
    const running = make().execute('book three', {
      runId: 'r',
      onBoundary: (b) => {
        if (b.point === 'checkpoint.before' && book.ran.t2 === 1) throw new SimulatedCrash(b);
      },
    });
    book.gateOf('t0').open();
    await holding.promise;
    book.gateOf('t1').open();
    await ticks();
    held.open();
    await ticks();
    book.gateOf('t2').open();
    await expect(running).rejects.toBeInstanceOf(SimulatedCrash);

    await clock.advance(30_001); // the crashed holder's lease runs out
    const resumed = await make().resume('r');
    // t0's and t1's settled marks were written (their appends resolved); t2, the last to settle, is
    // handed straight to the step and recorded by the checkpoint the crash fell before.
    expect(unknownCalls(resumed.messages)).not.toContain('t0');
    expect(unknownCalls(resumed.messages)).not.toContain('t1');
    expect(book.ran).toEqual({ t0: 1, t1: 1, t2: 1 });
  });

  it('are never dropped by a checkpoint that was on its way (planner, a node settling during it)', async () => {
    const clock = createFakeClock();
    const inner = memoryStore({ clock });
    const pay = gatedTool('pay');
    const plan = {
      nodes: [
        { id: 'a', capability: 'pay', input: { value: 'A' }, dependsOn: [] },
        { id: 'b', capability: 'pay', input: { value: 'B' }, dependsOn: [] },
      ],
    };
    let saves = 0;
    const held = gate();
    const holding = gate();
    const store = interceptWrites(inner, async (kind) => {
      if (kind !== 'save') return;
      saves += 1;
      // Save 1: before planning; save 2: plan frozen, a and b started; save 3: after a settled.
      if (saves === 3) {
        holding.open();
        await held.promise;
      }
    });
    const make = () =>
      definePlanner({
        name: 'payer',
        model: scriptedModel([{ text: JSON.stringify(plan) }]),
        capabilities: [{ name: 'pay', description: 'Pays.', executable: pay.tool }],
        durable: { store, clock },
      });
    let crashArmed = false;
    const running = make().execute('pay twice', {
      runId: 'p',
      onBoundary: (b) => {
        if (crashArmed && b.point === 'checkpoint.before') throw new SimulatedCrash(b);
      },
    });
    await ticks();
    pay.gateOf('a').open();
    await holding.promise;
    pay.gateOf('b').open();
    await ticks();
    crashArmed = true;
    held.open();
    await expect(running).rejects.toBeInstanceOf(SimulatedCrash);

    await clock.advance(30_001);
    const resumed = await make().resume('p');
    expect(resumed.nodes.map((n) => [n.id, n.status])).toEqual([
      ['a', 'completed'],
      ['b', 'completed'],
    ]);
    expect(pay.ran).toEqual({ a: 1, b: 1 });
  });
});

describe('model usage', () => {
  it('is counted for every model call that returned, even when the trip crashed before a checkpoint', async () => {
    const clock = createFakeClock();
    const store = memoryStore({ clock });
    const lookup = gatedTool('lookup', true);
    lookup.gateOf('l1').open();
    const script: ScriptedTurn[] = [
      { toolCalls: [{ id: 'l1', name: 'lookup', args: { value: 'x' } }] },
      { text: 'done' },
    ];
    const inner = scriptedModel(script);
    let billed: Usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
    let answered = 0;
    // Every call that returns is billed: a different usage each time, as a real provider's would be.
    const model: Model = {
      name: inner.name,
      provider: inner.provider,
      async generate(request: ModelRequest) {
        const response = await inner.generate(request);
        answered += 1;
        const usage = {
          inputTokens: answered * 10,
          outputTokens: answered,
          totalTokens: answered * 11,
        };
        billed = {
          inputTokens: billed.inputTokens + usage.inputTokens,
          outputTokens: billed.outputTokens + usage.outputTokens,
          totalTokens: billed.totalTokens + usage.totalTokens,
        };
        return { ...response, usage };
      },
    };
    const make = () =>
      defineAgent({ name: 'reader', model, tools: [lookup.tool], durable: { store, clock } });
    await expect(
      make().execute('look it up', {
        runId: 'u',
        onBoundary: (b) => {
          if (b.point === 'effect.after' && b.effectKind === 'tool') throw new SimulatedCrash(b);
        },
      }),
    ).rejects.toBeInstanceOf(SimulatedCrash);
    await clock.advance(30_001);
    const resumed = await make().resume('u');
    expect(resumed.output).toBe('done');
    expect(resumed.usage).toEqual(billed);
  });
});
