import { describe, expect, it } from 'vitest';
import { splitSnapshot, StoredItems } from './snapshot-items.js';

const snapshot = {
  format: 1,
  state: {
    messages: [1, 2, 3, 4, 5].map((n) => ({ role: 'user', content: `m${n}` })),
    short: [1, 2],
    nested: { ledger: ['a', 'b', 'c', 'd'] },
  },
  pending: [],
};

describe('planning the rows of a checkpoint', () => {
  it('plans only the new elements, as one row, against what it knows is stored', () => {
    const known = new StoredItems();
    const first = known.plan('r', splitSnapshot(snapshot));
    expect(first.expectedVersion).toBeNull();
    // Unknown: every stored row goes, and each array is written in one row.
    expect(first.chunks.map(({ path, idx, items }) => [path, idx, items.length])).toEqual([
      ['["state","messages"]', 0, 5],
      ['["state","nested","ledger"]', 0, 4],
    ]);
    expect(first.cuts).toEqual([]);
    expect(first.trim).toBe(true);
    known.remember('r', 1, first.stored);

    const grown = structuredClone(snapshot);
    grown.state.messages.push({ role: 'assistant', content: 'm6' }, { role: 'tool', content: 't' });
    const second = known.plan('r', splitSnapshot(grown));
    expect(second).toMatchObject({ expectedVersion: 1, cuts: [], trim: false });
    expect(second.chunks).toEqual([
      {
        path: '["state","messages"]',
        idx: 5,
        items: [
          { role: 'assistant', content: 'm6' },
          { role: 'tool', content: 't' },
        ],
      },
    ]);
    known.remember('r', 2, second.stored);

    // Stored as text, an element's bytes are what a resumed run replays: the same keys in another order are
    // a change, written again from the start of the row that holds it.
    const reordered = structuredClone(grown);
    reordered.state.messages[5] = { content: 'm6', role: 'assistant' };
    expect(known.plan('r', splitSnapshot(reordered)).chunks.map(({ idx }) => idx)).toEqual([5]);

    // An element rewritten in place is written again from the start of its row.
    const rewritten = structuredClone(grown);
    rewritten.state.messages[6] = { role: 'tool', content: 'changed' };
    const third = known.plan('r', splitSnapshot(rewritten));
    expect(third.chunks.map(({ idx, items }) => [idx, items.length])).toEqual([[5, 2]]);
    expect(third.cuts).toEqual([{ path: '["state","messages"]', after: 4 }]);
    known.remember('r', 3, third.stored);

    // Shrunk to the start of a row: that row and the ones after go; an array gone takes its rows along.
    const shrunk = structuredClone(rewritten);
    shrunk.state.messages.splice(5);
    shrunk.state.nested.ledger.splice(2);
    const fourth = known.plan('r', splitSnapshot(shrunk));
    expect(fourth.chunks).toEqual([]);
    expect(fourth.cuts).toEqual([
      { path: '["state","messages"]', after: 4 },
      { path: '["state","nested","ledger"]', after: -1 },
    ]);
    expect(known.plan('r', splitSnapshot(rewritten), true).chunks).toHaveLength(2);
  });
});

describe('splitting a snapshot', () => {
  it('takes out an array of long strings from its first element (a conversation a codec encoded), not short ones', () => {
    const encoded = 'cairn:1:deflate+aes-gcm@k1:' + 'A'.repeat(1_000);
    const split = splitSnapshot({ items: { conversation: [encoded], names: ['a', 'b'] } });
    expect([...split.arrays.keys()]).toEqual(['["items","conversation"]']);
    expect(split.inline).toMatchObject({ items: { conversation: [], names: ['a', 'b'] } });
  });
});
