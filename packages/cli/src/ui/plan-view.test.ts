import { childRunId, type JsonValue } from '@cairn/sdk';
import { describe, expect, it } from 'vitest';
import { planLayers, planView } from './plan-view.js';

const node = (id: string, dependsOn: string[] = [], capability = 'lookup') => ({
  id,
  capability,
  input: null,
  dependsOn,
});

function snapshot(state: { [key: string]: JsonValue }): JsonValue {
  return { format: 1, state, pending: null, journalSeq: 0 };
}

describe('planLayers', () => {
  it('puts each node one layer past its deepest dependency', () => {
    const layers = planLayers([
      node('d', ['b', 'c']),
      node('a'),
      node('b', ['a']),
      node('c', ['a', 'b']),
      node('e', ['missing']),
    ]);
    expect(Object.fromEntries(layers)).toEqual({ a: 0, b: 1, c: 2, d: 3, e: 0 });
  });

  it('lays out a cycle and a chain deeper than the call stack', () => {
    expect(Object.fromEntries(planLayers([node('x', ['y']), node('y', ['x'])]))).toEqual({
      y: 0,
      x: 1,
    });
    const chain = Array.from({ length: 20_000 }, (_, at) =>
      node(`n${at}`, at === 0 ? [] : [`n${at - 1}`]),
    );
    expect(planLayers(chain.reverse()).get('n19999')).toBe(19_999);
  });
});

describe('planView', () => {
  it("reads each node's state from the ledger of the current revision, running nodes and held ones", () => {
    const view = planView(
      'p',
      snapshot({
        phase: 'executing',
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
          // An entry of the earlier plan says nothing of this one.
          { id: 'next', capability: 'lookup', revision: 0, status: 'failed' },
          { id: 'done', capability: 'lookup', revision: 1, status: 'completed' },
          {
            id: 'broke',
            capability: 'lookup',
            revision: 1,
            status: 'failed',
            error: { name: 'CairnError', code: 'TOOL_FAILED', message: 'x', retryable: false },
          },
          { id: 'lost', capability: 'lookup', revision: 1, status: 'unknown' },
        ],
        running: ['agent'],
        awaiting: [{ callId: 'held', tool: 'lookup', args: null, argsHash: 'h', deadline: null }],
        childRunIds: 'reserved',
        replanCount: 1,
        usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 },
      }),
    );
    expect(view).toMatchObject({
      phase: 'executing',
      revision: 1,
      replans: 1,
      usage: { inputTokens: 10, outputTokens: 2 },
    });
    const states = Object.fromEntries(view!.nodes.map((n) => [n.id, n.state]));
    expect(states).toEqual({
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

  it('names the children of a run started before reserved child ids by the old scheme', () => {
    const view = planView(
      'old',
      snapshot({ phase: 'executing', plan: { revision: 0, nodes: [node('a')] }, running: ['a'] }),
    );
    expect(view?.nodes[0]?.childRunId).toBe('old/a');
  });

  it('is undefined for an agent run or no checkpoint, and empty while planning', () => {
    expect(planView('a', snapshot({ messages: [] }))).toBeUndefined();
    expect(planView('a', null)).toBeUndefined();
    expect(planView('p', snapshot({ phase: 'planning', plan: null }))).toEqual({
      phase: 'planning',
      revision: null,
      replans: 0,
      usage: null,
      nodes: [],
    });
  });
});
