import {
  defineAgent,
  definePlanner,
  defineTool,
  memoryStore,
  pendingApprovals,
  RunWaitingError,
  type Capability,
  type JsonValue,
  type PlannerConfig,
} from '@cairn/sdk';
import { createFakeClock, scriptedModel, type Script, type ScriptedTurn } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

function planTurn(
  nodes: Array<{ id: string; capability: string; input: JsonValue; dependsOn?: string[] }>,
): ScriptedTurn {
  return { text: JSON.stringify({ nodes: nodes.map((n) => ({ dependsOn: [], ...n })) }) };
}

/** A planner with `pay` (held over 100 EUR) and `echo` (never held); counts each node's runs. */
function world(script: Script, approval?: Partial<PlannerConfig['approval']>) {
  const clock = createFakeClock({ autoAdvance: true });
  const store = memoryStore({ clock });
  const runs: string[] = [];
  const pay = defineTool({
    name: 'pay',
    description: 'Pays.',
    input: z.object({ cents: z.number().int() }),
    execute: ({ cents }, ctx) => {
      runs.push(ctx.toolCallId);
      return { paid: cents };
    },
  });
  const echo = defineTool({
    name: 'echo',
    description: 'Echoes.',
    input: z.object({ value: z.string() }),
    idempotent: true,
    execute: ({ value }, ctx) => {
      runs.push(ctx.toolCallId);
      return { echo: value };
    },
  });
  const capabilities: Capability[] = [
    { name: 'pay', description: 'Pay.', executable: pay },
    { name: 'echo', description: 'Echo.', executable: echo },
  ];
  const model = scriptedModel(script, { name: 'planning' });
  const planner = definePlanner({
    name: 'trip',
    model,
    capabilities,
    approval: {
      capabilities: { pay: (input: { cents: number }) => input.cents > 10_000 },
      ...approval,
    },
    durable: { store, clock, leaseMs: 10_000 },
  });
  return { clock, store, runs, model, planner };
}

const payAndEcho = [
  planTurn([
    { id: 'hotel', capability: 'pay', input: { cents: 45_000 } },
    { id: 'note', capability: 'echo', input: { value: 'booked' } },
    { id: 'after', capability: 'echo', input: { value: 'done' }, dependsOn: ['hotel'] },
  ]),
];

describe('a planner whose node needs approval', () => {
  it('runs the other ready branches, then waits holding nothing for a decision on the held node', async () => {
    const { planner, store, runs } = world(payAndEcho);
    await expect(planner.execute('Book the trip', { runId: 'p-1' })).rejects.toBeInstanceOf(
      RunWaitingError,
    );
    expect(runs).toEqual(['note']);
    const { run } = (await store.load('p-1'))!;
    expect(run).toMatchObject({ status: 'waiting', owner: null });
    expect(pendingApprovals(run.wait?.detail)).toMatchObject([
      { callId: 'hotel', tool: 'pay', args: { cents: 45_000 } },
    ]);
    // Not decided: a resume finds it still waiting and runs nothing.
    await expect(planner.resume('p-1')).rejects.toBeInstanceOf(RunWaitingError);
    expect(runs).toEqual(['note']);
  });

  it('runs the node once approved, then its dependents', async () => {
    const { planner, store, runs } = world(payAndEcho);
    await planner.execute('Book the trip', { runId: 'p-2' }).catch(() => undefined);
    const [held] = pendingApprovals((await store.load('p-2'))!.run.wait?.detail);
    await planner.approve('p-2', 'hotel', { argsHash: held!.argsHash, by: 'ana' });
    const result = await planner.resume('p-2');
    expect(runs).toEqual(['note', 'hotel', 'after']);
    expect(result.nodes.map((n) => [n.id, n.status])).toEqual([
      ['note', 'completed'],
      ['hotel', 'completed'],
      ['after', 'completed'],
    ]);
  });

  it('replans around a rejected node: the planning model reads why, and the node never runs', async () => {
    const { planner, runs, model } = world([
      ...payAndEcho,
      planTurn([{ id: 'cheaper', capability: 'echo', input: { value: 'hostel' } }]),
    ]);
    await planner.execute('Book the trip', { runId: 'p-3' }).catch(() => undefined);
    await planner.reject('p-3', 'hotel', { reason: 'too expensive', by: 'ana' });
    const result = await planner.resume('p-3');
    expect(runs).toEqual(['note', 'cheaper']);
    const replan = model.calls[1]!.messages.at(-1)!;
    expect(replan.role === 'user' && replan.content).toContain('too expensive');
    expect(result.nodes.find((n) => n.id === 'hotel')).toMatchObject({
      status: 'failed',
      error: { code: 'TOOL_REJECTED' },
    });
  });

  it('decides an undecided node at its deadline by onTimeout', async () => {
    const { planner, clock, runs } = world(
      [...payAndEcho, planTurn([{ id: 'skip', capability: 'echo', input: { value: 'x' } }])],
      { timeoutMs: 60_000 },
    );
    await planner.execute('Book the trip', { runId: 'p-4' }).catch(() => undefined);
    await clock.advance(60_000);
    await planner.resume('p-4');
    expect(runs).toEqual(['note', 'skip']);
  });

  it('does not hold a node the policy lets through', async () => {
    const { planner, runs } = world([
      planTurn([{ id: 'coffee', capability: 'pay', input: { cents: 400 } }]),
    ]);
    await expect(planner.execute('Buy coffee')).resolves.toMatchObject({
      output: { coffee: { paid: 400 } },
    });
    expect(runs).toEqual(['coffee']);
  });

  it('fails the node of a child agent that would wait: only a root run waits', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const store = memoryStore({ clock });
    const pay = defineTool({
      name: 'pay',
      description: 'Pays.',
      input: z.object({ cents: z.number().int() }),
      execute: ({ cents }) => ({ paid: cents }),
    });
    const buyer = defineAgent({
      name: 'buyer',
      model: scriptedModel([{ toolCalls: [{ id: 'p', name: 'pay', args: { cents: 1 } }] }]),
      tools: [pay],
      approval: { tools: { pay: true } },
    });
    const planner = definePlanner({
      name: 'shop',
      model: scriptedModel([planTurn([{ id: 'buy', capability: 'buyer', input: 'buy it' }])]),
      capabilities: [{ name: 'buyer', description: 'Buys.', executable: buyer }],
      maxReplans: 0,
      durable: { store, clock },
    });
    const error = await planner.execute('shop').catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'NODE_FAILED' });
    expect(String((error as Error).cause)).toContain('only a root run waits');
  });
});
