import { describe, expect, it } from 'vitest';
import { mergeSnapshot, splitSnapshot, StoredItems } from './snapshot-items.js';

const snapshot = {
  format: 1,
  state: {
    messages: [1, 2, 3, 4, 5].map((n) => ({ role: 'user', content: `m${n}` })),
    short: [1, 2],
    nested: { ledger: ['a', 'b', 'c', 'd'] },
  },
  pending: [],
};

describe('splitting a snapshot into its long arrays', () => {
  it('takes out arrays of at least four elements under objects and puts them back', () => {
    const split = splitSnapshot(snapshot);
    expect([...split.arrays.keys()]).toEqual([
      '["state","messages"]',
      '["state","nested","ledger"]',
    ]);
    expect(split.inline).toEqual({
      format: 1,
      state: { messages: [], short: [1, 2], nested: { ledger: [] } },
      pending: [],
    });
    expect(mergeSnapshot(split.inline, Object.fromEntries(split.arrays))).toEqual(snapshot);
  });

  it('plans only the new elements against what it knows is stored, and everything otherwise', () => {
    const known = new StoredItems();
    const first = known.plan('r', splitSnapshot(snapshot));
    expect(first.expectedVersion).toBeNull();
    expect(first.upserts).toHaveLength(9);
    known.remember('r', 1, first.canonical);

    const grown = structuredClone(snapshot);
    grown.state.messages.push({ role: 'assistant', content: 'm6' });
    const second = known.plan('r', splitSnapshot(grown));
    expect(second).toMatchObject({
      expectedVersion: 1,
      lengths: { '["state","messages"]': 6, '["state","nested","ledger"]': 4 },
    });
    expect(second.upserts).toEqual([
      { path: '["state","messages"]', idx: 5, item: { role: 'assistant', content: 'm6' } },
    ]);

    // An element rewritten in place is written again from there; key order does not count as a change.
    const rewritten = structuredClone(grown);
    rewritten.state.messages[4] = { content: 'm5', role: 'user' };
    rewritten.state.messages[5] = { role: 'assistant', content: 'changed' };
    known.remember('r', 2, second.canonical);
    expect(known.plan('r', splitSnapshot(rewritten)).upserts.map((u) => u.idx)).toEqual([5]);
    expect(known.plan('r', splitSnapshot(rewritten), true).upserts).toHaveLength(10);
  });
});
