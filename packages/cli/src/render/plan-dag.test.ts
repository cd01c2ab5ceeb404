import { planView, type JsonValue } from '@cairn/sdk';
import { expect, it } from 'vitest';
import { renderPlan } from './plan-dag.js';
import { plainStyle } from './style.js';

const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
const node = (id: string, dependsOn: string[] = []) => ({
  id,
  capability: 'c',
  input: null,
  dependsOn,
});

// A plan part way: one node completed, one failed, one running, one held for approval, one ready, and one
// pending on a node that failed.
const state = {
  goal: 'g',
  phase: 'executing',
  conversation: [],
  invalidPlans: 0,
  plan: {
    revision: 1,
    nodes: [
      node('a'),
      node('b'),
      node('c', ['a']),
      node('d', ['a']),
      node('e', ['a']),
      node('f', ['b']),
    ],
  },
  ledger: [
    { id: 'a', capability: 'c', revision: 1, status: 'completed', output: 1 },
    {
      id: 'b',
      capability: 'c',
      revision: 1,
      status: 'failed',
      error: { name: 'CairnError', code: 'TOOL_FAILED', message: 'no', retryable: false },
    },
  ],
  usage,
  replanCount: 1,
  running: ['c'],
  awaiting: [{ callId: 'd', tool: 'c', args: null, argsHash: 'h', deadline: null }],
} as unknown as JsonValue;

it("reads each node's state from a planner's checkpointed state, and draws the plan by depth", () => {
  const plan = planView(state)!;
  expect(plan.nodes.map((n) => [n.id, n.state])).toEqual([
    ['a', 'completed'],
    ['b', 'failed'],
    ['c', 'running'],
    ['d', 'awaiting'],
    ['e', 'ready'],
    ['f', 'pending'],
  ]);
  expect(renderPlan(plan, plainStyle)).toBe(
    [
      'plan revision 1, executing, 6 nodes',
      '  NODE   CAPABILITY  STATE',
      '  ✓ a    c           completed',
      '  ✗ b    c           failed     TOOL_FAILED',
      '    ▶ c  c           running    after a',
      '    ⏸ d  c           awaiting   after a',
      '    ○ e  c           ready      after a',
      '    · f  c           pending    after b',
    ].join('\n'),
  );
});

it('has no plan for a state that is not a planner’s, and no nodes before its plan is frozen', () => {
  expect(planView({ input: 'hi', messages: [] })).toBeUndefined();
  const planning = planView({ ...(state as object), phase: 'planning', plan: null } as JsonValue)!;
  expect(renderPlan(planning, plainStyle)).toBe('plan not frozen yet, planning');
});
