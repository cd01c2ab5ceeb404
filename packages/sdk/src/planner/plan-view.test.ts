import { childRunId, planView, type JsonValue } from '@cairn/sdk';
import { describe, expect, it } from 'vitest';

const usage = { inputTokens: 10, outputTokens: 2, totalTokens: 12 };

const node = (id: string, dependsOn: string[] = [], capability = 'lookup') => ({
  id,
  capability,
  input: null,
  dependsOn,
});

const entry = (id: string, revision: number, status: string) => ({
  id,
  capability: 'lookup',
  revision,
  status,
});

/** A planner's state as its checkpoint holds it, with `fields` over an executing plan of no nodes. */
function state(fields: { [key: string]: JsonValue }): JsonValue {
  return {
    goal: 'g',
    phase: 'executing',
    conversation: [],
    invalidPlans: 0,
    plan: { revision: 0, nodes: [] },
    ledger: [],
    usage,
    replanCount: 0,
    running: [],
    childRunIds: 'reserved',
    ...fields,
  };
}

const states = (view: ReturnType<typeof planView>) =>
  Object.fromEntries((view?.nodes ?? []).map((n) => [n.id, n.state]));

describe('planView', () => {
  it("reads each node's state from the ledger of the current revision, running nodes and held ones", () => {
    const view = planView(
      state({
        plan: {
          revision: 1,
          nodes: [
            node('done'),
            node('broke'),
            node('agent', ['done'], 'concierge'),
            node('held', ['done']),
            node('next', ['done']),
            node('later', ['broke']),
            node('lost'),
          ],
        },
        ledger: [
          entry('done', 1, 'completed'),
          {
            ...entry('broke', 1, 'failed'),
            error: { name: 'CairnError', code: 'TOOL_FAILED', message: 'x', retryable: false },
          },
          entry('lost', 1, 'unknown'),
        ],
        running: ['agent'],
        awaiting: [{ callId: 'held', tool: 'lookup', args: null, argsHash: 'h', deadline: null }],
        replanCount: 1,
      }),
      'p',
    );
    expect(view).toMatchObject({ phase: 'executing', revision: 1, replans: 1, usage });
    expect(states(view)).toEqual({
      done: 'completed',
      broke: 'failed',
      agent: 'running',
      held: 'awaiting',
      next: 'ready',
      later: 'pending',
      lost: 'unknown',
    });
    expect(view!.nodes.find((n) => n.id === 'broke')?.code).toBe('TOOL_FAILED');
    expect(view!.nodes.find((n) => n.id === 'agent')?.childRunId).toBe(childRunId('p', 'agent'));
  });

  it('after a replan, counts an earlier plan only as completed dependencies, never as this plan’s nodes', () => {
    const view = planView(
      state({
        plan: {
          revision: 1,
          nodes: [node('fetch'), node('merge', ['base', 'fetch']), node('report', ['base'])],
        },
        ledger: [
          // Revision 0: `base` completed, `fetch` failed; the replan reuses the id `fetch` for a new node.
          entry('base', 0, 'completed'),
          entry('fetch', 0, 'failed'),
        ],
        replanCount: 1,
      }),
    );
    expect(states(view)).toEqual({ fetch: 'ready', merge: 'pending', report: 'ready' });
    expect(view!.nodes.find((n) => n.id === 'fetch')?.code).toBeUndefined();
    // A completed namesake of an earlier plan does not settle this plan's node either.
    const reused = planView(
      state({
        plan: { revision: 1, nodes: [node('fetch'), node('merge', ['fetch'])] },
        ledger: [entry('fetch', 0, 'completed'), entry('other', 0, 'failed')],
      }),
    );
    expect(states(reused)).toEqual({ fetch: 'ready', merge: 'pending' });
  });

  it('lays nodes out by dependency depth, a cycle cut and a chain deeper than the call stack', () => {
    const layers = (nodes: ReturnType<typeof node>[]) =>
      Object.fromEntries(
        planView(state({ plan: { revision: 0, nodes } }))!.nodes.map((n) => [n.id, n.layer]),
      );
    expect(
      layers([
        node('d', ['b', 'c']),
        node('a'),
        node('b', ['a']),
        node('c', ['a', 'b']),
        node('e', ['earlier']),
      ]),
    ).toEqual({ a: 0, b: 1, c: 2, d: 3, e: 0 });
    expect(layers([node('x', ['y']), node('y', ['x'])])).toEqual({ y: 0, x: 1 });
    const chain = Array.from({ length: 20_000 }, (_, at) =>
      node(`n${at}`, at === 0 ? [] : [`n${at - 1}`]),
    );
    expect(layers(chain.reverse()).n19999).toBe(19_999);
  });

  it('names the child of a running node by the scheme the run started with, only when given its id', () => {
    const running = { plan: { revision: 0, nodes: [node('a')] }, running: ['a'] };
    expect(planView(state(running))?.nodes[0]?.childRunId).toBeUndefined();
    const { childRunIds: _reserved, ...old } = state(running) as { [key: string]: JsonValue };
    expect(planView(old, 'old')?.nodes[0]?.childRunId).toBe('old/a');
  });

  it('is undefined for what is not a planner’s state, and has no nodes while the first plan is made', () => {
    expect(planView({ input: 'hi', messages: [] })).toBeUndefined();
    expect(planView(undefined)).toBeUndefined();
    expect(planView(state({ ledger: 'corrupt' }))).toBeUndefined();
    expect(planView(state({ phase: 'planning', plan: null }))).toEqual({
      phase: 'planning',
      revision: null,
      replans: 0,
      usage,
      nodes: [],
    });
  });
});
