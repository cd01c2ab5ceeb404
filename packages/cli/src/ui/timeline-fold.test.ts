import type { RunEvent } from '@cairn/sdk';
import { describe, expect, it } from 'vitest';
// The fold is pure (no DOM), so it runs here in Node; this file is beside browser/, not in it, because that
// directory is type-checked for a browser, which has no test runner.
import { buildTimeline } from './browser/timeline-fold.js';

const usage = (inputTokens: number, outputTokens: number) => ({ inputTokens, outputTokens });

/** A takeover as the runtime records it: the new attempt re-records the crashed one's journal at its times. */
const takenOver: RunEvent[] = [
  { seq: 1, at: 1000, type: 'attempt.started', epoch: 1, owner: 'a', takenFrom: null },
  { seq: 2, at: 1000, type: 'unit.started', unit: 'trip-0', label: 'trip 0' },
  {
    seq: 3,
    at: 1001,
    type: 'unit.settled',
    unit: 'trip-0',
    label: 'trip 0',
    ms: 1,
    usage: usage(5, 1),
  },
  {
    seq: 9,
    at: 1600,
    type: 'attempt.abandoned',
    epoch: 1,
    owner: 'a',
    lastSeq: 3,
    how: 'taken_over',
  },
  { seq: 10, at: 1600, type: 'attempt.started', epoch: 2, owner: 'b', takenFrom: 'a' },
  { seq: 11, at: 1002, type: 'unit.started', unit: 'trip-1', label: 'trip 1' },
  {
    seq: 12,
    at: 1002,
    type: 'effect.started',
    effectId: 'book',
    unit: 'trip-1',
    name: 'book',
    kind: 'tool',
  },
  {
    ...{ seq: 13, at: 1601, type: 'effect.settled', effectId: 'book', unit: 'trip-1' },
    ...{ name: 'book', kind: 'tool', outcome: 'unknown', ms: 599 },
  },
  { seq: 14, at: 1602, type: 'unit.settled', unit: 'trip-1', label: 'trip 1', usage: usage(7, 2) },
  { seq: 15, at: 1602, type: 'ended', status: 'completed' },
];

describe('buildTimeline', () => {
  it("keeps the crashed attempt's work in its lane, settled by the attempt that took over", () => {
    const { lanes, usage: total } = buildTimeline(takenOver);
    expect(lanes.map((lane) => [lane.epoch, lane.owner, lane.abandoned])).toEqual([
      [1, 'a', { how: 'taken_over', lastSeq: 3 }],
      [2, 'b', null],
    ]);
    expect(lanes[0]!.rows.map((row) => row.key)).toEqual(['trip-0', 'trip-1']);
    expect(lanes[1]!.rows).toEqual([]);
    const trip1 = lanes[0]!.rows[1]!;
    expect(trip1.settledIn).toBe(lanes[1]);
    expect(trip1.effects.map((effect) => [effect.id, effect.outcome])).toEqual([
      ['book', 'unknown'],
    ]);
    expect(trip1.effects[0]!.settledIn).toBe(lanes[1]);
    expect(total).toEqual(usage(12, 3));
  });

  it('gives events before the first attempt kept a lane, and a planning row its calls’ extent', () => {
    const {
      lanes,
      truncatedAt,
      usage: total,
    } = buildTimeline([
      { seq: 40, at: 5, type: 'history.truncated' },
      {
        seq: 41,
        at: 10,
        type: 'effect.started',
        effectId: 'plan',
        unit: null,
        name: 'o3',
        kind: 'plan',
      },
      {
        ...{ seq: 42, at: 14, type: 'effect.settled', effectId: 'plan', unit: null, name: 'o3' },
        ...{ kind: 'plan', outcome: 'ok', usage: usage(3, 4) },
      },
    ]);
    expect(truncatedAt).toBe(40);
    expect(lanes.map((lane) => lane.epoch)).toEqual([null]);
    expect(lanes[0]!.rows.map((row) => [row.key, row.end, row.ms])).toEqual([[null, 14, 4]]);
    expect(total).toEqual(usage(3, 4));
  });
});
