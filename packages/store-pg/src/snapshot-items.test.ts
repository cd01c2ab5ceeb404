import { describe, expect, it } from 'vitest';
import {
  arraysOfChunks,
  checkItemCounts,
  itemCountsKey,
  mergeSnapshot,
  splitSnapshot,
  StoredItems,
  type LoadedArray,
} from './snapshot-items.js';

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
      [itemCountsKey]: [5, 4],
    });
    const loaded = new Map(
      [...split.arrays].map(([path, items]): [string, LoadedArray] => [
        path,
        { items, starts: [0] },
      ]),
    );
    const { inline, problem } = checkItemCounts(split.inline, loaded);
    expect(problem).toBeUndefined();
    expect(mergeSnapshot(inline, Object.fromEntries(split.arrays))).toEqual(snapshot);
  });

  it('tells when the rows loaded hold fewer or more elements than were written', () => {
    const split = splitSnapshot(snapshot);
    const loaded = (messages: number, extra = false) => {
      const arrays = new Map<string, LoadedArray>([
        ['["state","messages"]', { items: Array<null>(messages).fill(null), starts: [0] }],
        ['["state","nested","ledger"]', { items: ['a', 'b', 'c', 'd'], starts: [0] }],
      ]);
      if (extra) arrays.set('["state","other"]', { items: [1], starts: [0] });
      return arrays;
    };
    expect(checkItemCounts(split.inline, loaded(2)).problem).toMatch(/holds 2 elements where 5/);
    expect(checkItemCounts(split.inline, loaded(5, true)).problem).toMatch(/rows of 3 arrays/);
    // A snapshot written before lengths were recorded is read as it is.
    const { [itemCountsKey]: _counts, ...older } = split.inline as Record<string, unknown>;
    expect(checkItemCounts(older as never, loaded(2))).toEqual({ inline: older });
  });

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

  it('reads rows back into arrays, and refuses rows that do not follow one another', () => {
    expect(
      arraysOfChunks([
        ['p', 0, [1, 2]],
        ['p', 2, [3]],
        ['q', 0, ['a']],
      ]),
    ).toEqual(
      new Map([
        ['p', { items: [1, 2, 3], starts: [0, 2] }],
        ['q', { items: ['a'], starts: [0] }],
      ]),
    );
    expect(
      arraysOfChunks([
        ['p', 0, [1, 2]],
        ['p', 3, [4]],
      ]),
    ).toMatch(/do not follow/);
    expect(arraysOfChunks([['p', 1, [1]]])).toMatch(/do not follow/);
  });
});
