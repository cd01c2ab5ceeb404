import {
  definePlanner,
  defineTool,
  memoryStore,
  planLimits,
  type JsonValue,
  type PlannerConfig,
} from '@cairn/sdk';
import { createFakeClock, scriptedModel, type ScriptedTurn } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/** `[[[...]]]` nested `depth` levels, as JSON text: too deep for `JSON.stringify` to write. */
function nestedText(depth: number): string {
  return '['.repeat(depth) + ']'.repeat(depth);
}

/** A value nested `depth` levels of objects, the innermost holding `leaf`. */
function nested(depth: number, leaf: JsonValue = 'deep'): JsonValue {
  let value: JsonValue = leaf;
  for (let level = 0; level < depth; level += 1) value = { next: value };
  return value;
}

function node(id: string, input: JsonValue = { value: id }, dependsOn: string[] = []) {
  return { id, capability: 'echo', input, dependsOn };
}

/** A planner whose planning model answers `answers` in turn; `echo` and `deep` count their runs. */
function limitsWorld(answers: readonly string[], extra: Partial<PlannerConfig> = {}) {
  const clock = createFakeClock({ autoAdvance: true });
  const store = memoryStore({ clock });
  const calls: Record<string, number> = {};
  const count = (id: string) => {
    calls[id] = (calls[id] ?? 0) + 1;
  };
  const echo = defineTool({
    name: 'echo',
    description: 'Echoes its value.',
    input: z.object({ value: z.json() }),
    idempotent: true,
    execute: ({ value }, ctx) => {
      count(ctx.toolCallId);
      return { echo: value };
    },
  });
  const proto = defineTool({
    name: 'proto',
    description: 'Answers an object with a "__proto__" key.',
    input: z.object({}),
    idempotent: true,
    execute: (_args, ctx) => {
      count(ctx.toolCallId);
      return JSON.parse('{"__proto__":{"k":1},"plain":2}') as JsonValue;
    },
  });
  const deep = defineTool({
    name: 'deep',
    description: 'Answers a deeply nested value.',
    input: z.object({ depth: z.number().int() }),
    idempotent: true,
    execute: ({ depth }, ctx) => {
      count(ctx.toolCallId);
      return nested(depth);
    },
  });
  const turns: ScriptedTurn[] = answers.map((text) => ({ text }));
  const model = scriptedModel(turns, { name: 'planning' });
  const planner = definePlanner({
    name: 'limits',
    model,
    capabilities: [
      { name: 'echo', description: 'Echo a value.', executable: echo },
      { name: 'deep', description: 'A deep value.', executable: deep },
      { name: 'proto', description: 'A prototype key.', executable: proto },
    ],
    durable: { store, clock },
    ...extra,
  });
  return { store, clock, calls, model, planner };
}

describe('plan limits', () => {
  it('are documented: 10,000 nodes, 128 levels of nesting', () => {
    expect(planLimits).toEqual({ maxNodes: 10_000, maxDepth: 128 });
  });

  it('a plan of more than 10,000 nodes fails the run with PLAN_INVALID before any node runs, without asking again', async () => {
    const nodes = Array.from({ length: 10_001 }, (_, i) => node(`n${i}`));
    const answer = JSON.stringify({ nodes });
    const { planner, model, calls, store } = limitsWorld([answer, answer, answer]);
    const run = planner.execute('go', { runId: 'too-many' });
    await expect(run).rejects.toMatchObject({
      name: 'CairnError',
      code: 'PLAN_INVALID',
      data: { limit: 'maxNodes', max: 10_000, actual: 10_001 },
    });
    expect(model.calls).toHaveLength(1);
    expect(calls).toEqual({});
    const stored = await store.load('too-many');
    expect(stored?.run.status).toBe('failed');
    expect(stored?.run.error?.code).toBe('PLAN_INVALID');
    // The failure is final: resuming returns it without asking the model again.
    await expect(planner.resume('too-many')).rejects.toMatchObject({ code: 'PLAN_INVALID' });
    expect(model.calls).toHaveLength(1);
  });

  it('a node input nested 100,000 deep fails the run with PLAN_INVALID, not a RangeError', async () => {
    const answer = `{"nodes":[{"id":"a","capability":"echo","input":{"value":${nestedText(100_000)}},"dependsOn":[]}]}`;
    const { planner, model, calls, store } = limitsWorld([answer, answer, answer]);
    const error = await planner.execute('go', { runId: 'too-deep' }).catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(RangeError);
    expect(error).toMatchObject({
      code: 'PLAN_INVALID',
      data: { limit: 'maxDepth', max: 128, node: 'a' },
    });
    expect((error as Error).message).toContain('Node "a"');
    expect(model.calls).toHaveLength(1);
    expect(calls).toEqual({});
    expect((await store.load('too-deep'))?.run.status).toBe('failed');
  });

  it('a plan output nests at most 128 levels: 128 runs, 129 fails the run with PLAN_INVALID', async () => {
    const plan = (depth: number) =>
      JSON.stringify({ nodes: [node('a')], output: nested(depth - 1, { $ref: 'a.echo' }) });
    const fits = limitsWorld([plan(128)]);
    const result = await fits.planner.execute('go');
    expect(result.output).toEqual(nested(127, 'a'));

    const over = limitsWorld([plan(129)]);
    await expect(over.planner.execute('go')).rejects.toMatchObject({
      code: 'PLAN_INVALID',
      data: { limit: 'maxDepth', max: 128 },
    });
    expect(over.calls).toEqual({});
  });

  it('an answer nested too deep outside the inputs fails the run with PLAN_INVALID, not a RangeError', async () => {
    const answer = `{"nodes":[{"id":"a","capability":"echo","input":{"value":"A"}}],"notes":${nestedText(100_000)}}`;
    const { planner, calls } = limitsWorld([answer]);
    await expect(planner.execute('go')).rejects.toMatchObject({
      code: 'PLAN_INVALID',
      data: { limit: 'maxDepth' },
    });
    expect(calls).toEqual({});
  });

  it('maxPlanNodes lowers the cap; a value that is not a positive integer is INVALID_ARGUMENT', async () => {
    const answer = JSON.stringify({ nodes: [node('a'), node('b'), node('c')] });
    const { planner, calls } = limitsWorld([answer], { maxPlanNodes: 2 });
    await expect(planner.execute('go')).rejects.toMatchObject({
      code: 'PLAN_INVALID',
      data: { limit: 'maxNodes', max: 2, actual: 3 },
    });
    expect(calls).toEqual({});
    expect(() => limitsWorld([], { maxPlanNodes: 0 })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    expect(() => limitsWorld([], { maxPlanNodes: 1.5 })).toThrow(/maxPlanNodes/);
  });

  it('a node output nested deeper than 128 levels fails the node with TOOL_FAILED; the run stays resumable', async () => {
    const answer = JSON.stringify({
      nodes: [{ id: 'a', capability: 'deep', input: { depth: 1_000 }, dependsOn: [] }],
    });
    const { planner, calls, store } = limitsWorld([answer], { maxReplans: 0 });
    const error = await planner.execute('go', { runId: 'deep-out' }).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'NODE_FAILED',
      nodeId: 'a',
      cause: { code: 'TOOL_FAILED', data: { limit: 'maxDepth', max: 128 } },
    });
    expect(calls).toEqual({ a: 1 });
    const stored = await store.load('deep-out');
    expect(stored?.run.status).toBe('failed');
    await expect(planner.resume('deep-out')).rejects.toMatchObject({ code: 'NODE_FAILED' });
  });

  it('a node whose input nests deeper than 128 levels once its references are resolved fails with TOOL_INPUT_INVALID', async () => {
    const answer = JSON.stringify({
      nodes: [
        { id: 'a', capability: 'deep', input: { depth: 120 }, dependsOn: [] },
        node('b', { value: nested(20, { $ref: 'a' }) }, ['a']),
      ],
    });
    const { planner, calls } = limitsWorld([answer], { maxReplans: 0 });
    const error = await planner.execute('go').catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'NODE_FAILED',
      nodeId: 'b',
      cause: { code: 'TOOL_INPUT_INVALID', data: { limit: 'maxDepth', max: 128 } },
    });
    expect(calls).toEqual({ a: 1 });
  });
});

describe('prototype keys', () => {
  it('a node id "__proto__" is refused and sent back to the model; the next plan runs', async () => {
    const { planner, model, calls } = limitsWorld([
      JSON.stringify({ nodes: [node('__proto__'), node('b')] }),
      JSON.stringify({ nodes: [node('proto'), node('b')] }),
    ]);
    const result = await planner.execute('go');
    expect(model.calls).toHaveLength(2);
    const rejection = model.calls[1]?.messages.at(-1);
    expect(rejection?.content).toContain('Node id "__proto__" is reserved');
    expect(result.output).toEqual({ proto: { echo: 'proto' }, b: { echo: 'b' } });
    expect(calls).toEqual({ proto: 1, b: 1 });
  });

  it('a "__proto__" key of a node input or of the plan output is kept as data', async () => {
    const answer =
      '{"nodes":[{"id":"a","capability":"echo","input":{"value":"A"},"dependsOn":[]},' +
      '{"id":"b","capability":"echo","input":{"value":{"__proto__":{"$ref":"a.echo"}}},"dependsOn":["a"]}],' +
      '"output":{"__proto__":{"$ref":"a.echo"},"plain":true}}';
    const { planner } = limitsWorld([answer]);
    const result = await planner.execute('go');
    const output = result.output as Record<string, JsonValue>;
    expect(Object.getPrototypeOf(output)).toBe(Object.prototype);
    expect(Object.keys(output)).toEqual(['__proto__', 'plain']);
    expect(JSON.stringify(output)).toBe('{"__proto__":"A","plain":true}');
    expect(JSON.stringify(result.nodes[1]?.input)).toBe('{"value":{"__proto__":"A"}}');
  });

  it('a node output with a "__proto__" key keeps it, also in a run resumed from its checkpoint', async () => {
    const answer = JSON.stringify({
      nodes: [
        { id: 'a', capability: 'proto', input: {}, dependsOn: [] },
        node('b', { value: 'B' }, ['a']),
      ],
      output: { fromA: { $ref: 'a' } },
    });
    const { planner, store, clock, calls } = limitsWorld([answer]);
    await expect(
      planner.execute('go', {
        runId: 'proto-resume',
        onBoundary: (b) => {
          if (b.point === 'effect.before' && b.effectId === 'node/b') throw new Error('crash');
        },
      }),
    ).rejects.toThrow('crash');
    await clock.advance(60_000);
    const result = await planner.resume('proto-resume');
    expect(calls).toEqual({ a: 1, b: 1 });
    expect(JSON.stringify(result.output)).toBe('{"fromA":{"__proto__":{"k":1},"plain":2}}');
    expect(JSON.stringify(result.nodes[0]?.output)).toBe('{"__proto__":{"k":1},"plain":2}');
    expect((await store.load('proto-resume'))?.run.status).toBe('completed');
  });
});
