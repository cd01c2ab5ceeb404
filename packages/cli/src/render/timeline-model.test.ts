import type { RunEvent } from '@cairn/sdk';
import { describe, expect, it } from 'vitest';
import { plainStyle } from './style.js';
import { buildTimeline, type RunTimeline } from './timeline-model.js';
import { renderTimeline } from './timeline-text.js';
import { book, crashed } from '../../test/fixtures/takeover-events.js';

function timeline(events: RunEvent[]): RunTimeline {
  return {
    runId: 'r',
    kind: 'agent',
    name: 'a',
    status: 'completed',
    createdAt: 0,
    updatedAt: 0,
    encrypted: false,
    ...buildTimeline(events),
    events,
    plan: null,
    children: [],
  };
}

describe('buildTimeline', () => {
  it('keeps what the crashed attempt did in its own attempt, settled by the one that took over', () => {
    const model = buildTimeline(crashed);
    expect(model.attempts.map((attempt) => [attempt.owner, attempt.end])).toEqual([
      ['worker-a', { how: 'taken_over', lastSeq: 3, by: 'worker-b' }],
      ['worker-b', { how: 'ended', status: 'completed' }],
    ]);
    const [first, second] = model.attempts;
    const taker = { epoch: 2, owner: 'worker-b' };
    expect(first!.items).toMatchObject([
      { type: 'unit', unit: 'trip-0', continued: false, settled: true },
      {
        type: 'unit',
        unit: 'trip-1',
        continued: false,
        settled: true,
        settledIn: taker,
        effects: [
          { effectId: 'm1', settled: true, outcome: 'ok' },
          { effectId: 'e1', startedAt: 1_006, settled: true, outcome: 'unknown', settledIn: taker },
        ],
      },
    ]);
    expect(second!.items).toMatchObject([{ type: 'unit', unit: 'trip-2', continued: false }]);
  });

  it('renders the takeover and the unknown outcome so that they cannot be missed, with times that only go forward', () => {
    expect(renderTimeline(timeline(crashed), plainStyle)).toBe(
      [
        'r  agent a  completed',
        'attempt 1  epoch 1  worker-a  1970-01-01 00:00:01',
        '  trip 0  2 ms',
        '  trip 1  5 in / 2 out  settled by attempt 2 (worker-b) when it took over',
        '    ✓ chat gpt  ok  1 ms',
        '    ? execute_tool book  OUTCOME UNKNOWN OUTCOME_UNKNOWN  in flight when this attempt stopped; found so by attempt 2 (worker-b)',
        '  ✗ stopped without ending the run (crashed, or lost its lease); taken over by worker-b; its last checkpointed event was #3',
        'attempt 2  epoch 2  worker-b  1970-01-01 00:00:04  taken over from worker-a',
        '  trip 2  1 ms',
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
      '  ✗ stopped (crashed); continued by worker-b; its last checkpointed event was #3',
    );
  });

  it('shows an effect of a live attempt as in flight', () => {
    const live: RunEvent[] = [
      crashed[0]!,
      { seq: 2, at: 1_001, type: 'unit.started', unit: 'trip-1', label: 'trip 1' },
      { seq: 3, at: 1_002, type: 'effect.started', ...book },
    ];
    const text = renderTimeline({ ...timeline(live), status: 'running' }, plainStyle);
    expect(text).toContain('… execute_tool book  in flight');
  });
});
