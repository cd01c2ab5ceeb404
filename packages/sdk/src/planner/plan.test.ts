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
});
