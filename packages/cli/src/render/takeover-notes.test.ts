import type { RunEvent } from '@cairn/sdk';
import { describe, expect, it } from 'vitest';
import { plainStyle } from './style.js';
import { EventNotes } from './takeover-notes.js';
import { crashed as events } from '../../test/fixtures/takeover-events.js';

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
      "  chat gpt ok (1 ms) (attempt epoch 1's, recorded at the takeover)",
      "  execute_tool book started (attempt epoch 1's, recorded at the takeover)",
      '  execute_tool book OUTCOME UNKNOWN OUTCOME_UNKNOWN (in flight when attempt epoch 1 stopped)',
      'trip 1 settled (5 in / 2 out) (begun by attempt epoch 1)',
      'trip 2 started',
      'trip 2 settled (1 ms)',
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
