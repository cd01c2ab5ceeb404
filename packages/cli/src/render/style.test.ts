import type { RunEvent } from '@cairn/sdk';
import { expect, it } from 'vitest';
import { renderEventLine } from './event-line.js';
import { createStyle, visibleLength } from './style.js';

const unknown: RunEvent = {
  seq: 9,
  at: Date.UTC(2026, 11, 2, 14, 26, 28, 123),
  type: 'effect.settled',
  effectId: 'e',
  unit: 'trip-1',
  name: 'execute_tool book_flight',
  kind: 'tool',
  outcome: 'unknown',
  ms: 540,
};

it('colours only a terminal without NO_COLOR, and an unknown outcome stands out', () => {
  const plain = renderEventLine(unknown, createStyle({ isTty: false, env: {} }));
  expect(plain).toBe('#9 14:26:28.123   execute_tool book_flight OUTCOME UNKNOWN (540 ms)');
  expect(renderEventLine(unknown, createStyle({ isTty: true, env: { NO_COLOR: '1' } }))).toBe(
    plain,
  );
  const coloured = renderEventLine(unknown, createStyle({ isTty: true, env: {} }));
  expect(coloured).toContain('\u001b[1;7;33mOUTCOME UNKNOWN\u001b[0m');
  expect(visibleLength(coloured)).toBe(plain.length);
});
