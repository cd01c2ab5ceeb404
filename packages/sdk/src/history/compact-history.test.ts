import { describe, expect, it } from 'vitest';
import { compactRecord } from './compact-history.js';
import { historyEvents, parseStoredHistory, type HistoryRecord } from './stored-history.js';

const t0 = 1_796_000_000_000;

// One record of every kind, as the recorder keeps them: an agent trip, a planner node, a takeover, a wait.
const records: HistoryRecord[] = [
  { t: 'attempt', s: 1, at: t0, ep: 1, o: 'worker-a' },
  { t: 'unit', s: 2, at: t0 + 1, u: 'trip-0', l: 'trip 0', e: 9, end: t0 + 40, in: 10, out: 4 },
  {
    t: 'effect',
    s: 3,
    at: t0 + 1,
    id: 'trip-0/model',
    u: 'trip-0',
    n: 'chat gpt',
    k: 'model',
    e: 4,
    end: t0 + 30,
    o: 'ok',
    b: 167,
    in: 10,
    out: 4,
  },
  {
    t: 'effect',
    s: 5,
    at: t0 + 31,
    id: 'trip-0/tool/c1',
    u: 'trip-0',
    n: 'execute_tool pay',
    k: 'tool',
  },
  { t: 'signals', s: 6, at: t0 + 32, names: ['cairn.steer'] },
  { t: 'abandoned', s: 7, at: t0 + 50, ep: 1, o: 'worker-a', last: 6, how: 'taken_over' },
  { t: 'attempt', s: 8, at: t0 + 60, ep: 2, o: 'worker-b', from: 'worker-a' },
  {
    t: 'effect',
    s: 10,
    at: t0 + 61,
    id: 'node/fetch',
    u: 'node/fetch',
    n: 'invoke_agent fetch',
    k: 'node',
    e: 11,
    end: t0 + 70,
    o: 'error',
    c: 'TOOL_FAILED',
    b: 80,
    ch: 'child-1',
  },
  {
    t: 'effect',
    s: 12,
    at: t0 + 71,
    id: 'plan',
    n: 'chat gpt',
    k: 'plan',
    e: 13,
    end: t0 + 72,
    o: 'unknown',
  },
  { t: 'waiting', s: 14, at: t0 + 80, until: null, sig: ['cairn.approval'] },
  { t: 'ended', s: 15, at: t0 + 90, st: 'failed', c: 'TOOL_FAILED' },
];

describe('the compact history checkpoints write', () => {
  it('reads back every record as it was recorded, and the events they tell', () => {
    const stored = { v: 2, t0, records: records.map((record) => compactRecord(record, t0)) };
    const read = parseStoredHistory(JSON.parse(JSON.stringify(stored)), 15)!;
    expect(read.records).toEqual(records);
    expect(read.t0).toBe(t0);
    expect(historyEvents(read)).toEqual(historyEvents({ records }));
  });

  it('is about a third of the objects it replaces, for an agent trip', () => {
    const trip = records.slice(1, 4);
    const compact = JSON.stringify(trip.map((record) => compactRecord(record, t0)));
    expect(compact.length).toBeLessThan(JSON.stringify(trip).length / 2.5);
  });

  it('drops a record it cannot read and says the history was truncated there', () => {
    const stored = {
      v: 2,
      t0,
      records: [
        compactRecord(records[0]!, t0),
        ['e', 2, 1],
        'junk',
        ['?', 3, 1],
        compactRecord(records[4]!, t0),
      ],
    };
    const read = parseStoredHistory(stored, 20)!;
    expect(read.records).toEqual([records[0], records[4]]);
    expect(read.truncatedAt).toBe(20);
    expect(parseStoredHistory({ v: 2, records: [] }, 9)).toEqual({ records: [], truncatedAt: 9 });
  });

  it('still reads the objects checkpoints wrote before it', () => {
    expect(parseStoredHistory({ v: 1, records: records as never }, 15)).toEqual({ records });
  });
});
