import type { RunEvent } from '@cairn/sdk';
import { describe, expect, it } from 'vitest';
import { plainStyle } from './style.js';
import { EventNotes } from './takeover-notes.js';

const book = { effectId: 'e1', unit: 'trip-1', name: 'execute_tool book', kind: 'tool' } as const;
/** A takeover in the order the runtime records it (see timeline-model.test.ts). */
const events: RunEvent[] = [
  { seq: 1, at: 1_000, type: 'attempt.started', epoch: 1, owner: 'worker-a', takenFrom: null },
  { seq: 2, at: 1_001, type: 'unit.started', unit: 'trip-0', label: 'trip 0' },
  { seq: 3, at: 1_003, type: 'unit.settled', unit: 'trip-0', label: 'trip 0', ms: 2 },
  {
    ...{ seq: 4, at: 4_000, type: 'attempt.abandoned', epoch: 1, owner: 'worker-a' },
    ...{ lastSeq: 3, how: 'taken_over' },
  },
  {
    seq: 5,
    at: 4_000,
    type: 'attempt.started',
    epoch: 2,
    owner: 'worker-b',
    takenFrom: 'worker-a',
  },
  { seq: 6, at: 1_004, type: 'unit.started', unit: 'trip-1', label: 'trip 1' },
  { seq: 7, at: 1_006, type: 'effect.started', ...book },
  {
    ...{ seq: 8, at: 4_001, type: 'effect.settled', ...book },
    ...{ outcome: 'unknown', code: 'OUTCOME_UNKNOWN', ms: 2_995 },
  },
  { seq: 9, at: 4_002, type: 'ended', status: 'completed' },
];

const lines = (ordered: readonly RunEvent[]) => {
  const notes = new EventNotes(plainStyle);
  return ordered.map((event) => notes.line(event).replace(/^#\d+ \S+ /, ''));
};

describe('the event lines of a takeover', () => {
  it('say which attempt the work recorded at the takeover was, and that the call was in flight', () => {
    expect(lines(events)).toEqual([
      'attempt epoch 1 by worker-a',
      'trip 0 started',
      'trip 0 settled (2 ms)',
      'attempt epoch 1 by worker-a was taken over (it crashed, or lost its lease); its last checkpointed event was #3',
      'attempt epoch 2 by worker-b (taken over from worker-a)',
      "trip 1 started (attempt epoch 1's, recorded at the takeover)",
      "  execute_tool book started (attempt epoch 1's, recorded at the takeover)",
      '  execute_tool book OUTCOME UNKNOWN OUTCOME_UNKNOWN (in flight when attempt epoch 1 stopped)',
      'ended completed',
    ]);
  });

  it('say the same of the call when the lines are told in the order things happened', () => {
    const byTime = [...events].sort((a, b) => a.at - b.at || a.seq - b.seq);
    const told = lines(byTime);
    expect(told).toContain(
      '  execute_tool book OUTCOME UNKNOWN OUTCOME_UNKNOWN (in flight when attempt epoch 1 stopped)',
    );
    expect(told.filter((line) => line.includes('recorded at the takeover'))).toEqual([]);
  });
});
