import type { RunEvent } from '@cairn/sdk';
import { describe, expect, it } from 'vitest';
import { plainStyle } from './style.js';
import { buildTimeline, type RunTimeline } from './timeline-model.js';
import { renderTimeline } from './timeline-text.js';

// A crash in flight and its takeover, as the runtime records them: the abandonment comes just before the new
// attempt's start, and the in-flight call settles, unknown, in the new attempt.
const book = { effectId: 'e1', unit: 'trip-0', name: 'execute_tool book', kind: 'tool' } as const;
const crashed: RunEvent[] = [
  { seq: 1, at: 1_000, type: 'attempt.started', epoch: 1, owner: 'worker-a', takenFrom: null },
  { seq: 2, at: 1_001, type: 'unit.started', unit: 'trip-0', label: 'trip 0' },
  { seq: 3, at: 1_002, type: 'effect.started', ...book },
  {
    seq: 4,
    at: 1_100,
    type: 'attempt.abandoned',
    epoch: 1,
    owner: 'worker-a',
    lastSeq: 3,
    how: 'taken_over',
  },
  {
    seq: 5,
    at: 1_100,
    type: 'attempt.started',
    epoch: 2,
    owner: 'worker-b',
    takenFrom: 'worker-a',
  },
  {
    seq: 6,
    at: 1_101,
    type: 'effect.settled',
    ...book,
    outcome: 'unknown',
    code: 'OUTCOME_UNKNOWN',
    ms: 99,
  },
  {
    seq: 7,
    at: 1_102,
    type: 'unit.settled',
    unit: 'trip-0',
    label: 'trip 0',
    ms: 101,
    usage: { inputTokens: 5, outputTokens: 2 },
  },
  { seq: 8, at: 1_103, type: 'ended', status: 'completed' },
];

function timeline(events: RunEvent[]): RunTimeline {
  return {
    runId: 'r',
    kind: 'agent',
    name: 'a',
    status: 'completed',
    ...buildTimeline(events),
    events,
    plan: null,
    children: [],
  };
}

describe('buildTimeline', () => {
  it('ends the crashed attempt with who took over, and settles the call unknown in the next one', () => {
    const model = buildTimeline(crashed);
    expect(model.attempts.map((attempt) => [attempt.owner, attempt.end])).toEqual([
      ['worker-a', { how: 'taken_over', lastSeq: 3, by: 'worker-b' }],
      ['worker-b', { how: 'ended', status: 'completed' }],
    ]);
    const [first, second] = model.attempts;
    expect(first!.items).toMatchObject([
      {
        type: 'unit',
        unit: 'trip-0',
        continued: false,
        settled: false,
        effects: [{ effectId: 'e1', settled: false }],
      },
    ]);
    expect(second!.items).toMatchObject([
      {
        type: 'unit',
        continued: true,
        settled: true,
        ms: 101,
        effects: [{ effectId: 'e1', settled: true, outcome: 'unknown', startedAt: null }],
      },
    ]);
  });

  it('renders the takeover and the unknown outcome so that they cannot be missed', () => {
    expect(renderTimeline(timeline(crashed), plainStyle)).toBe(
      [
        'r  agent a  completed',
        'attempt 1  epoch 1  worker-a  1970-01-01 00:00:01',
        '  trip 0  not settled in this attempt',
        '    … execute_tool book  started; no outcome in this attempt',
        '  ✗ stopped without ending the run (crashed, or lost its lease); taken over by worker-b (what it did after #3 is superseded)',
        'attempt 2  epoch 2  worker-b  1970-01-01 00:00:01  taken over from worker-a',
        '  trip 0 (continued)  101 ms  5 in / 2 out',
        '    ? execute_tool book  OUTCOME UNKNOWN OUTCOME_UNKNOWN  99 ms',
        '  ended completed',
      ].join('\n'),
    );
  });

  it('keeps events whose attempt was dropped from a bounded history, and says so', () => {
    const events: RunEvent[] = [
      { seq: 40, at: 0, type: 'history.truncated' },
      { seq: 41, at: 5, type: 'signals', names: ['nudge'] },
      { seq: 42, at: 6, type: 'waiting', until: null, signals: ['go'] },
    ];
    const text = renderTimeline({ ...timeline(events), status: 'waiting' }, plainStyle);
    expect(text).toContain('(history up to #40 was dropped: the kept history is bounded)');
    expect(text).toContain('earlier attempt (its start was dropped from the history)');
    expect(text).toContain('  signals received: nudge');
    expect(text).toContain('  ⏸ waiting for go');
  });

  it('shows the word of a history written before the abandonments had their names', () => {
    const older = crashed.map((event) =>
      event.type === 'attempt.abandoned'
        ? ({ ...event, how: 'crashed' } as unknown as RunEvent)
        : event,
    );
    expect(renderTimeline(timeline(older), plainStyle)).toContain(
      '  ✗ stopped (crashed); continued by worker-b (what it did after #3 is superseded)',
    );
  });

  it('shows an effect of a live attempt as in flight', () => {
    const text = renderTimeline(timeline(crashed.slice(0, 3)), plainStyle);
    expect(text).toContain('… execute_tool book  in flight');
  });
});
