/** One event of a run's history on one line, as `runs watch` prints them while they arrive. */
import type { AbandonedHow, EffectOutcomeStatus, HistoryUsage, RunEvent } from '@cairn/sdk';
import { formatClock, formatDuration, formatTime, formatUsage } from './format.js';
import { statusPaint } from './run-list.js';
import type { Style } from './style.js';

/** How an effect ended, in a word or two: `ok`, `error CODE`, and an outcome nobody knows in the alarm look. */
export function describeOutcome(
  event: { outcome?: EffectOutcomeStatus; code?: string },
  style: Style,
): string {
  const code = event.code === undefined ? '' : ` ${event.code}`;
  switch (event.outcome) {
    case 'ok':
      return style.good('ok');
    case 'error':
      return style.bad(`error${code}`);
    case 'unknown':
      return style.alarm(`OUTCOME UNKNOWN${code}`);
    default:
      return style.faint('settled');
  }
}

/** The details of a settled effect or unit: `12 ms, 120 in / 14 out, 87 B, child run X`. */
export function settledDetails(event: {
  ms?: number;
  usage?: HistoryUsage;
  bytes?: number;
  childRunId?: string;
}): string {
  const parts: string[] = [];
  if (event.ms !== undefined) parts.push(formatDuration(event.ms));
  if (event.usage !== undefined) parts.push(formatUsage(event.usage));
  if (event.bytes !== undefined) parts.push(`${event.bytes} B`);
  if (event.childRunId !== undefined) parts.push(`child run ${event.childRunId}`);
  return parts.join(', ');
}

const abandoned: Partial<Record<AbandonedHow, string>> = {
  taken_over: 'was taken over (it crashed, or lost its lease)',
  handed_over: 'handed the run over',
  suspended: 'suspended the run (its store kept failing)',
};

/** What the event says, without its seq and time. */
export function describeEvent(event: RunEvent, style: Style): string {
  switch (event.type) {
    case 'attempt.started':
      return (
        `${style.strong('attempt')} epoch ${event.epoch} by ${event.owner}` +
        (event.takenFrom === null ? '' : style.warn(` (taken over from ${event.takenFrom})`))
      );
    case 'attempt.abandoned':
      return style.warn(
        `attempt epoch ${event.epoch} by ${event.owner} ${abandoned[event.how] ?? String(event.how)}; its last checkpointed event was #${event.lastSeq}`,
      );
    case 'unit.started':
      return `${event.label} started`;
    case 'unit.settled': {
      const details = settledDetails(event);
      return `${event.label} settled${details === '' ? '' : ` (${details})`}`;
    }
    case 'effect.started':
      return `  ${event.name} started`;
    case 'effect.settled': {
      const details = settledDetails(event);
      return `  ${event.name} ${describeOutcome(event, style)}${details === '' ? '' : ` (${details})`}`;
    }
    case 'signals':
      return `signals received: ${event.names.join(', ')}`;
    case 'waiting':
      return style.warn(
        `waiting${event.signals.length === 0 ? '' : ` for ${event.signals.join(', ')}`}${event.until === null ? '' : ` until ${formatTime(event.until)}`}`,
      );
    case 'ended':
      return `${style.strong('ended')} ${statusPaint(event.status, style)(event.status)}${event.code === undefined ? '' : ` ${event.code}`}`;
    case 'history.truncated':
      return style.faint(`history up to #${event.seq} was dropped (the kept history is bounded)`);
  }
}

/** The watch line of an event: `#12 14:26:28.123 trip 2 started`. */
export function renderEventLine(event: RunEvent, style: Style): string {
  const time = event.type === 'history.truncated' ? ' '.repeat(12) : formatClock(event.at);
  return `${style.faint(`#${event.seq}`)} ${style.faint(time)} ${describeEvent(event, style)}`;
}
