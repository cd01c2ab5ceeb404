import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../tool.js';
import type { Capability } from './capability.js';
import { validatePlan, type PlanContext } from './plan.js';
import { collectRefs, resolveRefs } from './refs.js';

const echo = defineTool({
  name: 'echo',
  description: 'Echo.',
  input: z.object({ value: z.string() }),
  execute: ({ value }) => value,
});
const capabilities = new Map<string, Capability>([
  ['echo', { name: 'echo', description: 'Echo.', executable: echo }],
]);
const fresh: PlanContext = { capabilities, completed: new Set(), failed: new Set() };

function problems(plan: unknown, context: PlanContext = fresh): string[] {
  const check = validatePlan(JSON.stringify(plan), context);
  return check.ok ? [] : check.problems;
}

const node = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  capability: 'echo',
  input: { value: id },
  dependsOn: [],
  ...extra,
});

describe('validatePlan', () => {
  it('accepts a DAG and defaults dependsOn', () => {
    const check = validatePlan(
      JSON.stringify({ nodes: [{ id: 'a', capability: 'echo', input: { value: 'x' } }] }),
      fresh,
    );
    expect(check).toEqual({
      ok: true,
      plan: { nodes: [{ id: 'a', capability: 'echo', input: { value: 'x' }, dependsOn: [] }] },
    });
  });

  it('names a missing dependency, a duplicate id and a reference outside dependsOn', () => {
    expect(
      problems({
        nodes: [
          node('a', { dependsOn: ['ghost'] }),
          node('a'),
          node('b', { input: { value: { $ref: 'a' } } }),
        ],
      }),
    ).toEqual([
      'Two nodes have the id "a".',
      'Node "a" depends on "ghost", which is neither a node of the plan nor a completed node.',
      'Node "b" refers to "a" in its input but does not list it in dependsOn.',
    ]);
  });

  it('finds a cycle, a self-dependency included', () => {
    expect(problems({ nodes: [node('a', { dependsOn: ['a'] })] })).toEqual([
      'The plan has a cycle: a -> a.',
    ]);
  });

  it('checks tool inputs without references against the tool schema', () => {
    expect(problems({ nodes: [node('a', { input: { value: 3 } })] })[0]).toMatch(
      /^Node "a": Invalid arguments for tool "echo"/,
    );
  });

  it('lets a replan depend on completed nodes but not reuse ids or depend on failed ones', () => {
    const context: PlanContext = {
      capabilities,
      completed: new Set(['done']),
      failed: new Set(['broken']),
    };
    expect(problems({ nodes: [node('next', { dependsOn: ['done'] })] }, context)).toEqual([]);
    expect(
      problems({ nodes: [node('done'), node('x', { dependsOn: ['broken'] })] }, context),
    ).toEqual([
      'Node id "done" was already used by a node that ran; pick a new id.',
      'Node "x" depends on "broken", which failed.',
    ]);
    expect(problems({ nodes: [], output: { $ref: 'done' } }, context)).toEqual([]);
    expect(problems({ nodes: [] })).toEqual(['A plan needs at least one node.']);
  });

  it('rejects an answer that is not JSON or not a plan', () => {
    expect(validatePlan('Sure! Here is a plan.', fresh)).toMatchObject({
      ok: false,
      problems: [expect.stringMatching(/^The answer is not JSON/)],
    });
    expect(problems({ nodes: [{ id: 'a/b', capability: 'echo', input: 1 }] })[0]).toMatch(
      /wrong shape/,
    );
  });

  it('finds a cycle closing a chain of 50,000 nodes without running out of stack', () => {
    const chain = Array.from({ length: 50_000 }, (_, i) =>
      node(`n${i}`, { dependsOn: [`n${i === 0 ? 49_999 : i - 1}`] }),
    );
    const [problem] = problems({ nodes: chain }, { ...fresh, maxNodes: 50_000 });
    expect(problem).toMatch(/^The plan has a cycle: n0 -> n49999 -> n49998 -> .* -> n1 -> n0\.$/);
  });

  it('refuses the node id "__proto__" and keeps a "__proto__" key of an input as data', () => {
    expect(problems({ nodes: [node('__proto__')] })).toEqual([
      'Node id "__proto__" is reserved; pick another id.',
    ]);
    const check = validatePlan(
      '{"nodes":[{"id":"a","capability":"echo","input":{"value":"x","__proto__":{"value":1}}}]}',
      fresh,
    );
    expect(check.ok && Object.keys(check.plan.nodes[0]!.input as object)).toEqual([
      'value',
      '__proto__',
    ]);
  });

  it('stops at a limit before checking the rest: the node count, then the nesting', () => {
    const three = { nodes: [node('a'), node('b'), node('c')] };
    expect(validatePlan(JSON.stringify(three), { ...fresh, maxNodes: 2 })).toEqual({
      ok: false,
      problems: ['The plan has 3 nodes; a plan may have at most 2 (maxPlanNodes).'],
      breach: {
        message: 'The plan has 3 nodes; a plan may have at most 2 (maxPlanNodes).',
        data: { limit: 'maxNodes', max: 2, actual: 3 },
      },
    });
    const deep = `{"nodes":[{"id":"a","capability":"echo","input":${'['.repeat(129)}${']'.repeat(129)}}]}`;
    expect(validatePlan(deep, fresh)).toMatchObject({
      ok: false,
      breach: { data: { limit: 'maxDepth', max: 128, node: 'a' } },
    });
    const fits = `{"nodes":[{"id":"a","capability":"echo","input":{"value":"x","n":${'['.repeat(127)}${']'.repeat(127)}}}]}`;
    expect(validatePlan(fits, fresh).ok).toBe(true);
  });
});

describe('references', () => {
  const outputs = new Map([['a', { list: [{ name: 'x' }], n: 1 }]]);

  it('are found anywhere and replaced by the output or part named', () => {
    const input = { keep: 1, all: { $ref: 'a' }, deep: [{ $ref: 'a.list.0.name' }] };
    expect(collectRefs(input)).toEqual([
      { node: 'a', path: [] },
      { node: 'a', path: ['list', '0', 'name'] },
    ]);
    expect(resolveRefs(input, outputs)).toEqual({
      ok: true,
      value: { keep: 1, all: { list: [{ name: 'x' }], n: 1 }, deep: ['x'] },
    });
  });

  it('say which part did not resolve', () => {
    expect(resolveRefs({ $ref: 'a.list.3' }, outputs)).toEqual({
      ok: false,
      message: '{"$ref":"a.list.3"}: a.list is [{"name":"x"}], which has no "3".',
    });
    expect(resolveRefs({ $ref: 'b' }, outputs)).toMatchObject({ ok: false });
    // An object with other keys besides $ref is plain data.
    expect(resolveRefs({ $ref: 'b', other: 1 }, outputs)).toEqual({
      ok: true,
      value: { $ref: 'b', other: 1 },
    });
  });

  it('keep a "__proto__" key as a key', () => {
    const resolved = resolveRefs(JSON.parse('{"__proto__":{"$ref":"a.n"},"x":2}'), outputs);
    expect(resolved.ok && JSON.stringify(resolved.value)).toBe('{"__proto__":1,"x":2}');
    expect(resolved.ok && Object.getPrototypeOf(resolved.value)).toBe(Object.prototype);
  });
});
