import {
  childRunId,
  CairnError,
  defineAgent,
  definePlanner,
  defineTool,
  memoryStore,
  NodeFailedError,
  PlannerDriftError,
  type Boundary,
  type Capability,
  type JsonValue,
  type PlannerConfig,
} from '@cairn/sdk';
import {
  createFakeClock,
  scriptedModel,
  SimulatedCrash,
  type Script,
  type ScriptedTurn,
} from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

interface NodeSpec {
  id: string;
  capability: string;
  input: JsonValue;
  dependsOn?: string[];
}

/** A planning answer: the plan as JSON text. */
function planTurn(nodes: NodeSpec[], output?: JsonValue): ScriptedTurn {
  const plan = {
    nodes: nodes.map((node) => ({ dependsOn: [], ...node })),
    ...(output === undefined ? {} : { output }),
  };
  return { text: JSON.stringify(plan), usage: { inputTokens: 30, outputTokens: 10 } };
}

/** Tools that count their runs per node id: `echo` (idempotent), `flaky` (always fails), `pay`. */
function world(script: Script) {
  const clock = createFakeClock({ autoAdvance: true });
  const store = memoryStore({ clock });
  const calls: Record<string, number> = {};
  let running = 0;
  let maxRunning = 0;
  const count = (id: string) => {
    calls[id] = (calls[id] ?? 0) + 1;
  };
  const echo = defineTool({
    name: 'echo',
    description: 'Echoes its value.',
    input: z.object({ value: z.string() }),
    idempotent: true,
    execute: async ({ value }, ctx) => {
      count(ctx.toolCallId);
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      await clock.sleep(10);
      running -= 1;
      return { echo: value };
    },
  });
  const flaky = defineTool({
    name: 'flaky',
    description: 'Always fails.',
    input: z.object({ value: z.string() }),
    idempotent: true,
    execute: (_args, ctx) => {
      count(ctx.toolCallId);
      throw new CairnError('TOOL_FAILED', 'the service is down');
    },
  });
  const pay = defineTool({
    name: 'pay',
    description: 'Pays (not idempotent).',
    input: z.object({ cents: z.number().int() }),
    execute: ({ cents }, ctx) => {
      count(ctx.toolCallId);
      return { paid: cents };
    },
  });
  const capabilities: Capability[] = [
    { name: 'echo', description: 'Echo a value.', executable: echo },
    { name: 'flaky', description: 'A flaky service.', executable: flaky },
    { name: 'pay', description: 'Pay an amount.', executable: pay },
  ];
  const model = scriptedModel(script, { name: 'planning' });
  const make = (extra: Partial<PlannerConfig> = {}) =>
    definePlanner({
      name: 'helper',
      model,
      capabilities,
      durable: { store, clock, leaseMs: 10_000 },
      ...extra,
    });
  return { clock, store, calls, model, make, capabilities, maxRunning: () => maxRunning };
}

/** Crashes the attempt at the first boundary matching `where`. */
function crashWhere(where: (point: string, effectId?: string) => boolean) {
  return {
    onBoundary: (b: Boundary) => {
      if (where(b.point, b.effectId)) throw new SimulatedCrash(b);
    },
  };
}

/** The text of the last user message the planning model was sent in call `index`. */
function lastUserMessage(model: ReturnType<typeof scriptedModel>, index: number): string {
  const messages = model.calls[index]?.messages ?? [];
  const last = messages.filter((m) => m.role === 'user').at(-1);
  return last?.role === 'user' ? last.content : '';
}

describe('a planner run', () => {
  it('runs the plan as a DAG: references resolved, at most maxParallel at once, output returned', async () => {
    const { make, calls, model, maxRunning } = world([
      planTurn(
        [
          { id: 'a', capability: 'echo', input: { value: 'A' } },
          { id: 'b', capability: 'echo', input: { value: 'B' } },
          { id: 'c', capability: 'echo', input: { value: 'C' } },
          {
            id: 'd',
            capability: 'echo',
            input: { value: { $ref: 'b.echo' } },
            dependsOn: ['a', 'b', 'c'],
          },
        ],
        { first: { $ref: 'a' }, last: { $ref: 'd.echo' } },
      ),
    ]);
    const result = await make({ maxParallel: 2 }).execute('echo things', { runId: 'p1' });
    expect(result.output).toEqual({ first: { echo: 'A' }, last: 'B' });
    expect(calls).toEqual({ a: 1, b: 1, c: 1, d: 1 });
    expect(maxRunning()).toBe(2);
    expect(result.nodes.map((n) => [n.id, n.status])).toEqual([
      ['a', 'completed'],
      ['b', 'completed'],
      ['c', 'completed'],
      ['d', 'completed'],
    ]);
    expect(result.nodes[3]?.input).toEqual({ value: 'B' });
    expect(result.usage).toEqual({ inputTokens: 30, outputTokens: 10, totalTokens: 40 });
    expect(result.replanCount).toBe(0);

    const request = model.calls[0]!;
    expect(request.tools).toEqual([]);
    expect(request.responseSchema).toMatchObject({ type: 'object', required: ['nodes'] });
    const system = request.messages[0];
    expect(system?.role).toBe('system');
    expect(system?.content).toContain('- echo (tool): Echo a value.');
    expect(system?.content).toContain('{"$ref":"nodeId"}');
    expect(request.messages[1]).toEqual({ role: 'user', content: 'Goal: echo things' });
  });

  it('returns the outputs of the nodes nothing depends on when the plan names no output', async () => {
    const { make } = world([
      planTurn([
        { id: 'a', capability: 'echo', input: { value: 'A' } },
        { id: 'b', capability: 'echo', input: { value: { $ref: 'a.echo' } }, dependsOn: ['a'] },
        { id: 'c', capability: 'echo', input: { value: 'C' } },
      ]),
    ]);
    const result = await make().execute('go');
    expect(result.output).toEqual({ b: { echo: 'A' }, c: { echo: 'C' } });
  });

  it('runs an agent node as a child run under `childRunId(runId, nodeId)` and adds its usage once', async () => {
    const { store, capabilities, clock } = world([]);
    const agentModel = scriptedModel([
      { text: 'agent answer to: ' + 'x', usage: { inputTokens: 5, outputTokens: 5 } },
    ]);
    const writer = defineAgent({ name: 'writer', model: agentModel });
    const model = scriptedModel([
      planTurn([
        { id: 'draft', capability: 'writer', input: { topic: 'cairns' } },
        {
          id: 'shout',
          capability: 'echo',
          input: { value: { $ref: 'draft' } },
          dependsOn: ['draft'],
        },
      ]),
    ]);
    const planner = definePlanner({
      name: 'with-agent',
      model,
      capabilities: [
        ...capabilities,
        { name: 'writer', description: 'Writes text.', executable: writer },
      ],
      durable: { store, clock },
    });
    const result = await planner.execute('write', { runId: 'pa' });
    expect(agentModel.calls[0]?.messages).toEqual([
      { role: 'user', content: '{"topic":"cairns"}' },
    ]);
    expect(result.output).toEqual({ shout: { echo: 'agent answer to: x' } });
    expect(result.nodes[0]?.child).toEqual({
      runId: childRunId('pa', 'draft'),
      kind: 'agent',
      trips: 1,
      usage: { inputTokens: 5, outputTokens: 5, totalTokens: 10 },
      unknownToolCalls: [],
    });
    expect(result.usage).toEqual({ inputTokens: 35, outputTokens: 15, totalTokens: 50 });
    expect((await store.load(childRunId('pa', 'draft')))?.run).toMatchObject({
      kind: 'agent',
      status: 'completed',
    });
  });
});

describe('an invalid plan', () => {
  it('is answered with its problems and asked again, never executed', async () => {
    const { make, calls, model } = world([
      planTurn([
        { id: 'a', capability: 'echo', input: { value: 'A' }, dependsOn: ['b'] },
        { id: 'b', capability: 'echo', input: { value: 'B' }, dependsOn: ['a'] },
      ]),
      planTurn([{ id: 'a', capability: 'teleport', input: { value: 'A' } }]),
      planTurn([{ id: 'a', capability: 'echo', input: { value: 'A' } }]),
    ]);
    const result = await make().execute('go', { runId: 'inv' });
    expect(result.output).toEqual({ a: { echo: 'A' } });
    expect(model.calls).toHaveLength(3);
    expect(lastUserMessage(model, 1)).toContain('The plan has a cycle: a -> b -> a.');
    expect(lastUserMessage(model, 2)).toContain(
      'Node "a" uses the unknown capability "teleport". Capabilities: echo, flaky, pay.',
    );
    expect(calls).toEqual({ a: 1 });
    expect(result.usage.totalTokens).toBe(120);
    expect(result.replanCount).toBe(0);
  });

  it('fails the run with PLAN_INVALID after maxPlanAttempts invalid answers, running nothing', async () => {
    const { make, calls, model, store } = world([
      { text: 'I would start with echo.' },
      planTurn([{ id: 'a', capability: 'echo', input: { value: 1 } }]),
    ]);
    const run = make({ maxPlanAttempts: 2 }).execute('go', { runId: 'inv2' });
    await expect(run).rejects.toMatchObject({
      code: 'PLAN_INVALID',
      data: { attempts: 2 },
    });
    expect(model.calls).toHaveLength(2);
    expect(lastUserMessage(model, 1)).toContain('The answer is not JSON');
    expect(calls).toEqual({});
    expect((await store.load('inv2'))?.run.status).toBe('failed');
  });
});

describe('a failed node', () => {
  it('triggers a replan of the unfinished part that keeps what completed', async () => {
    const { make, calls, model } = world([
      planTurn([
        { id: 'a', capability: 'echo', input: { value: 'A' } },
        { id: 'b', capability: 'flaky', input: { value: 'B' } },
        { id: 'c', capability: 'echo', input: { value: { $ref: 'b' } }, dependsOn: ['a', 'b'] },
      ]),
      planTurn(
        [{ id: 'b2', capability: 'echo', input: { value: { $ref: 'a.echo' } }, dependsOn: ['a'] }],
        { result: { $ref: 'b2.echo' } },
      ),
    ]);
    const result = await make().execute('go', { runId: 'rp' });
    expect(result.output).toEqual({ result: 'A' });
    expect(result.replanCount).toBe(1);
    expect(calls).toEqual({ a: 1, b: 1, b2: 1 });
    // The ledger is in the order nodes settled: a and b ran at once, b2 only after the replan.
    const ledger = result.nodes.map((n) => [n.id, n.status, n.error?.code ?? null]);
    expect(ledger.slice(0, 2)).toEqual(
      expect.arrayContaining([
        ['a', 'completed', null],
        ['b', 'failed', 'TOOL_FAILED'],
      ]),
    );
    expect(ledger[2]).toEqual(['b2', 'completed', null]);
    const replan = lastUserMessage(model, 1);
    expect(replan).toContain('Node "b" (flaky) failed: TOOL_FAILED: the service is down');
    expect(replan).toContain('"id":"a"');
    expect(replan).toContain('Nodes of the plan that did not run: c.');
  });

  it('ends the run failed with NodeFailedError naming the node once the replan budget is spent', async () => {
    const { make, model, store, calls } = world([
      planTurn([{ id: 'first', capability: 'flaky', input: { value: 'x' } }]),
      planTurn([{ id: 'second', capability: 'flaky', input: { value: 'y' } }]),
    ]);
    const planner = make({ maxReplans: 1 });
    const error = await planner.execute('go', { runId: 'nf' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NodeFailedError);
    expect(error).toMatchObject({
      code: 'NODE_FAILED',
      nodeId: 'second',
      capability: 'flaky',
      cause: { code: 'TOOL_FAILED', message: 'the service is down' },
    });
    expect((error as Error).message).toContain('all 1 replans are spent');
    expect(model.calls).toHaveLength(2);
    expect(calls).toEqual({ first: 1, second: 1 });
    const stored = await store.load('nf');
    expect(stored?.run.status).toBe('failed');
    expect(stored?.run.error?.code).toBe('NODE_FAILED');

    // The stored failure is what resuming returns, without running anything.
    await expect(planner.resume('nf')).rejects.toBeInstanceOf(NodeFailedError);
    expect(model.calls).toHaveLength(2);
    expect(calls).toEqual({ first: 1, second: 1 });
  });

  it('fails at once with maxReplans: 0', async () => {
    const { make, model } = world([
      planTurn([{ id: 'x', capability: 'flaky', input: { value: 'x' } }]),
    ]);
    await expect(make({ maxReplans: 0 }).execute('go')).rejects.toMatchObject({
      code: 'NODE_FAILED',
      nodeId: 'x',
    });
    expect(model.calls).toHaveLength(1);
  });
});

describe('resume', () => {
  it('keeps the replan budget: a replan made before a crash counts after it', async () => {
    const { make, model, calls, clock } = world([
      planTurn([{ id: 'first', capability: 'flaky', input: { value: 'x' } }]),
      planTurn([{ id: 'second', capability: 'flaky', input: { value: 'y' } }]),
      planTurn([{ id: 'third', capability: 'echo', input: { value: 'z' } }]),
    ]);
    await expect(
      make({ maxReplans: 1 }).execute('go', {
        runId: 'budget',
        ...crashWhere((point, id) => point === 'effect.before' && id === 'node/second'),
      }),
    ).rejects.toBeInstanceOf(SimulatedCrash);
    expect(model.calls).toHaveLength(2);

    await clock.advance(10_001);
    const error = await make({ maxReplans: 1 })
      .resume('budget')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NodeFailedError);
    expect(error).toMatchObject({ nodeId: 'second' });
    // No third plan: the replan made before the crash was remembered.
    expect(model.calls).toHaveLength(2);
    expect(calls).toEqual({ first: 1, second: 1 });
  });

  it('never asks the planning model again once the plan was checkpointed', async () => {
    const { make, model, calls, clock } = world([
      planTurn([
        { id: 'a', capability: 'echo', input: { value: 'A' } },
        { id: 'b', capability: 'echo', input: { value: 'B' }, dependsOn: ['a'] },
      ]),
    ]);
    await expect(
      make().execute('go', {
        runId: 'again',
        ...crashWhere((point, id) => point === 'effect.before' && id === 'node/b'),
      }),
    ).rejects.toBeInstanceOf(SimulatedCrash);
    await clock.advance(10_001);
    const result = await make().resume('again');
    expect(result.resumed).toBe(true);
    expect(result.output).toEqual({ b: { echo: 'B' } });
    expect(model.calls).toHaveLength(1);
    expect(calls).toEqual({ a: 1, b: 1 });
  });

  it('reports a non-idempotent node in flight at a crash as unknown and replans, never re-running it', async () => {
    const { make, model, calls, clock } = world([
      planTurn([{ id: 'charge', capability: 'pay', input: { cents: 500 } }]),
      planTurn([{ id: 'check', capability: 'echo', input: { value: 'verify the charge' } }]),
    ]);
    await expect(
      make().execute('go', {
        runId: 'inflight',
        ...crashWhere((point, id) => point === 'effect.after' && id === 'node/charge'),
      }),
    ).rejects.toBeInstanceOf(SimulatedCrash);
    expect(calls).toEqual({ charge: 1 });

    await clock.advance(10_001);
    const result = await make().resume('inflight');
    expect(calls).toEqual({ charge: 1, check: 1 });
    expect(result.nodes.map((n) => [n.id, n.status])).toEqual([
      ['charge', 'unknown'],
      ['check', 'completed'],
    ]);
    expect(result.replanCount).toBe(1);
    expect(lastUserMessage(model, 1)).toContain(
      'Node "charge" (pay) was in flight when the run was interrupted',
    );
  });

  it('throws PlannerDriftError before anything runs when the capabilities changed; force proceeds', async () => {
    const { make, model, calls, clock, capabilities } = world([
      planTurn([
        { id: 'a', capability: 'echo', input: { value: 'A' } },
        { id: 'b', capability: 'echo', input: { value: 'B' }, dependsOn: ['a'] },
      ]),
    ]);
    const original = make();
    await expect(
      original.execute('go', {
        runId: 'drift',
        ...crashWhere((point, id) => point === 'effect.before' && id === 'node/b'),
      }),
    ).rejects.toBeInstanceOf(SimulatedCrash);
    await clock.advance(10_001);

    // The same capabilities under another model and instructions are not drift.
    expect(make({ instructions: 'Be quick.', model: scriptedModel([]) }).signature).toBe(
      original.signature,
    );
    const changed = make({ capabilities: [...capabilities].reverse() });
    expect(changed.signature).not.toBe(original.signature);
    const boundaries: string[] = [];
    const error = await changed
      .resume('drift', { onBoundary: (b) => void boundaries.push(b.point) })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlannerDriftError);
    expect(error).toMatchObject({
      code: 'PLANNER_DRIFT',
      runId: 'drift',
      stored: original.signature,
      current: changed.signature,
    });
    expect(boundaries).toEqual([]);
    expect(calls).toEqual({ a: 1 });

    const forced = await changed.resume('drift', { force: true });
    expect(forced.output).toEqual({ b: { echo: 'B' } });
    expect(model.calls).toHaveLength(1);
    expect(calls).toEqual({ a: 1, b: 1 });
    expect(await changed.resume('drift')).toMatchObject({ output: { b: { echo: 'B' } } });
  });

  it('of a completed run performs nothing and returns the stored result', async () => {
    const { make, model, calls } = world([
      planTurn([{ id: 'a', capability: 'echo', input: { value: 'A' } }]),
    ]);
    const planner = make();
    const first = await planner.execute('go', { runId: 'done' });
    expect(first.resumed).toBe(false);
    const boundaries: string[] = [];
    const again = await make().resume('done', {
      onBoundary: (b) => void boundaries.push(b.point),
    });
    expect(boundaries).toEqual([]);
    expect(again).toEqual({ ...first, resumed: true });
    expect(model.calls).toHaveLength(1);
    expect(calls).toEqual({ a: 1 });
  });
});

describe('definePlanner', () => {
  it('rejects duplicate or malformed capability names and bad limits', () => {
    const { capabilities } = world([]);
    const model = scriptedModel([]);
    const echo = capabilities[0]!;
    expect(() => definePlanner({ name: 'p', model, capabilities: [echo, echo] })).toThrow(
      /two capabilities named "echo"/,
    );
    expect(() =>
      definePlanner({ name: 'p', model, capabilities: [{ ...echo, name: 'has space' }] }),
    ).toThrow(/Capability name/);
    expect(() => definePlanner({ name: 'p', model, capabilities: [echo], maxParallel: 0 })).toThrow(
      /maxParallel/,
    );
  });
});
