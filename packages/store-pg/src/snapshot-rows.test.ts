import { describe, expect, it } from 'vitest';
import { splitSnapshot } from './snapshot-items.js';
import {
  arraysOfRows,
  checkItemCounts,
  itemCountsKey,
  mergeSnapshot,
  pointerOf,
  type ChunkRow,
  type ReadArrays,
} from './snapshot-rows.js';

const snapshot = {
  format: 1,
  state: {
    messages: [1, 2, 3, 4, 5].map((n) => ({ role: 'user', content: `m${n}` })),
    short: [1, 2],
    nested: { ledger: ['a', 'b', 'c', 'd'] },
  },
  pending: [],
  history: { v: 1, records: [1, 2, 3, 4] },
};

/** The rows a full write of `split` leaves, each array in one row. */
function rowsOf(split: ReturnType<typeof splitSnapshot>): ChunkRow[] {
  return [...split.arrays]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([path, items]) => [path, 0, JSON.stringify(items)]);
}

function read(rows: ChunkRow[]): ReadArrays {
  const arrays = arraysOfRows(rows);
  if (typeof arrays === 'string') throw new Error(arrays);
  return arrays;
}

describe('splitting a snapshot and reading it back from its rows', () => {
  it('takes out arrays of at least four elements under objects, recording each by its path, and puts them back', () => {
    const split = splitSnapshot(snapshot);
    expect(split.inline).toEqual({
      format: 1,
      state: { messages: [], short: [1, 2], nested: { ledger: [] } },
      pending: [],
      history: { v: 1, records: [] },
      [itemCountsKey]: { '/state/messages': 5, '/state/nested/ledger': 4, '/history/records': 4 },
    });
    const checked = checkItemCounts(split.inline, read(rowsOf(split)));
    expect(checked.problem).toBeUndefined();
    const arrays = new Map([...checked.arrays].map(([path, array]) => [path, array.items]));
    expect(mergeSnapshot(checked.inline, arrays, checked.dropped)).toEqual(snapshot);
  });

  it('escapes keys holding / and ~ in the paths it records', () => {
    expect(pointerOf(['a/b', 'c~d'])).toBe('/a~1b/c~0d');
  });

  it('refuses rows that hold other lengths, arrays it did not take out, rows moved to another path, and gaps', () => {
    const split = splitSnapshot(snapshot);
    const rows = rowsOf(split);
    const messages = rows.findIndex(([path]) => path === '["state","messages"]');
    const with_ = (index: number, row: ChunkRow) => rows.map((r, i) => (i === index ? row : r));
    const problem = (changed: ChunkRow[]) => checkItemCounts(split.inline, read(changed)).problem;
    expect(problem(with_(messages, ['["state","messages"]', 0, '[1,2]']))).toMatch(
      /holds 2 elements where 5/,
    );
    expect(problem([...rows, ['["state","other"]', 0, '[1]']])).toMatch(/did not take out/);
    expect(
      problem(with_(messages, ['["state","notes"]', 0, JSON.stringify(snapshot.state.messages)])),
    ).toMatch(/did not take out|gone/);
    expect(problem(rows.filter((_, i) => i !== messages))).toMatch(/are gone/);
    expect(
      arraysOfRows([
        ['["p"]', 0, '[1,2]'],
        ['["p"]', 3, '[4]'],
      ]),
    ).toMatch(/do not follow/);
    expect(arraysOfRows([['["p"]', 0, '[1,']])).toMatch(/not JSON/);
    expect(arraysOfRows([['["p",', 0, '[1]']])).toMatch(/not one/);
  });

  it('drops the history instead of refusing the run when its rows are unreadable, missing or out of place', () => {
    const split = splitSnapshot(snapshot);
    const rows = rowsOf(split);
    const history = rows.findIndex(([path]) => path === '["history","records"]');
    const variants: ChunkRow[][] = [
      rows.map((row, i) => (i === history ? [row[0], 0, '[{"t":'] : row)),
      rows.filter((_, i) => i !== history),
      rows.map((row, i) => (i === history ? [row[0], 0, '[1]'] : row)),
      rows.map((row, i) => (i === history ? [row[0], 2, row[2]] : row)),
    ];
    for (const changed of variants) {
      const checked = checkItemCounts(split.inline, read(changed));
      expect(checked.problem).toBeUndefined();
      const arrays = new Map([...checked.arrays].map(([path, array]) => [path, array.items]));
      const merged = mergeSnapshot(checked.inline, arrays, checked.dropped) as typeof snapshot;
      expect(merged.history.records).toBeNull();
      expect(merged.state).toEqual(snapshot.state);
    }
  });

  it('reads a snapshot an earlier checkpoint wrote: lengths by sorted path, or none', () => {
    const split = splitSnapshot(snapshot);
    const sorted = [...split.arrays.keys()].sort();
    const inline = {
      ...(split.inline as object),
      [itemCountsKey]: sorted.map((path) => split.arrays.get(path)!.length),
    };
    expect(checkItemCounts(inline, read(rowsOf(split))).problem).toBeUndefined();
    const short = rowsOf(split).map((row): ChunkRow =>
      row[0] === '["state","messages"]' ? [row[0], 0, '[1]'] : row,
    );
    expect(checkItemCounts(inline, read(short)).problem).toMatch(/holds 1 elements where 5/);
    const { [itemCountsKey]: _counts, ...older } = inline as Record<string, unknown>;
    expect(checkItemCounts(older as never, read(short)).problem).toBeUndefined();
  });
});
