/** `runs timeline` as text: attempts as sections, their trips or nodes, effects with outcomes, child runs indented. */
import type { AbandonedHow } from '@cairn/sdk';
import { encryptedNote } from '../encrypted-view.js';
import { describeOutcome, settledDetails } from './event-line.js';
import { formatDuration, formatTime, formatUsage } from './format.js';
import { indent, renderPlan } from './plan-dag.js';
import { statusPaint } from './run-list.js';
import type { Style } from './style.js';
import type {
  AttemptEnd,
  AttemptRef,
  AttemptView,
  EffectView,
  RunTimeline,
  UnitView,
} from './timeline-model.js';

/** The text of a run's timeline, with its plan and its child runs' timelines. */
export function renderTimeline(timeline: RunTimeline, style: Style): string {
  const lines: string[] = [
    `${style.strong(timeline.runId)}  ${timeline.kind} ${timeline.name}  ${statusPaint(timeline.status, style)(timeline.status)}`,
  ];
  if (timeline.encrypted) {
    // Its history is in its encrypted checkpoint: the record's times are all there is to show.
    lines.push(
      style.faint(encryptedNote("This run's history and payloads")),
      `created ${formatTime(timeline.createdAt)}  updated ${formatTime(timeline.updatedAt)}`,
    );
  }
  if (timeline.plan !== null) lines.push(renderPlan(timeline.plan, style));
  const placed = new Set<string>();
  const child = (effect: { childRunId?: string } | null, unit: string | null): string[] => {
    const found = timeline.children.find(
      ({ nodeId, timeline: { runId } }) =>
        !placed.has(runId) &&
        (effect?.childRunId === runId || (unit !== null && unit === `node/${nodeId}`)),
    );
    if (found === undefined) return [];
    placed.add(found.timeline.runId);
    return [indent(renderTimeline(found.timeline, style), 6)];
  };
  if (timeline.truncatedAt !== null) {
    lines.push(
      style.faint(
        `(history up to #${timeline.truncatedAt} was dropped: the kept history is bounded)`,
      ),
    );
  }
  if (timeline.attempts.length === 0 && !timeline.encrypted) {
    lines.push(style.faint(timeline.events.length === 0 ? 'No history recorded yet.' : ''));
  }
  for (const [at, attempt] of timeline.attempts.entries()) {
    lines.push(attemptHeading(attempt, at + 1, style));
    for (const item of attempt.items) {
      if (item.type === 'unit') {
        lines.push(`  ${unitLine(item, style)}`);
        for (const effect of item.effects) {
          lines.push(`    ${effectLine(effect, attempt, style)}`, ...child(effect, null));
        }
        lines.push(...child(null, item.unit));
      } else if (item.type === 'effect') {
        lines.push(`  ${effectLine(item, attempt, style)}`, ...child(item, null));
      } else if (item.type === 'signals') {
        lines.push(`  signals received: ${item.names.join(', ')}`);
      }
    }
    if (attempt.end !== null) lines.push(`  ${attemptEnd(attempt.end, style)}`);
  }
  if (timeline.ended !== null && timeline.attempts.length === 0) {
    lines.push(
      attemptEnd(
        {
          how: 'ended',
          status: timeline.ended.status,
          ...(timeline.ended.code === undefined ? {} : { code: timeline.ended.code }),
        },
        style,
      ),
    );
  }
  const rest = timeline.children.filter(({ timeline: { runId } }) => !placed.has(runId));
  if (rest.length > 0) {
    lines.push(style.strong('child runs'));
    for (const { timeline: childTimeline } of rest)
      lines.push(indent(renderTimeline(childTimeline, style), 2));
  }
  return lines.filter((line) => line !== '').join('\n');
}

function attemptHeading(attempt: AttemptView, number: number, style: Style): string {
  if (attempt.epoch === null)
    return (
      style.strong('earlier attempt') + style.faint(' (its start was dropped from the history)')
    );
  const parts = [
    style.strong(`attempt ${number}`),
    `epoch ${attempt.epoch}`,
    attempt.owner ?? '?',
    ...(attempt.startedAt === null ? [] : [formatTime(attempt.startedAt)]),
  ];
  if (attempt.takenFrom !== null) parts.push(style.warn(`taken over from ${attempt.takenFrom}`));
  return parts.join('  ');
}

function unitLine(unit: UnitView, style: Style): string {
  const parts = [style.strong(unit.label) + (unit.continued ? style.faint(' (continued)') : '')];
  if (unit.ms !== undefined) parts.push(formatDuration(unit.ms));
  if (unit.usage !== undefined) parts.push(formatUsage(unit.usage));
  if (!unit.settled) parts.push(style.faint('not settled in this attempt'));
  if (unit.settledIn !== undefined)
    parts.push(style.warn(`settled by ${attemptName(unit.settledIn)} when it took over`));
  return parts.join('  ');
}

/** An attempt named by another: its number is its epoch's place, which the reader sees in the headings. */
function attemptName({ epoch, owner }: AttemptRef): string {
  return `attempt ${epoch ?? '?'}${owner === null ? '' : ` (${owner})`}`;
}

function effectLine(effect: EffectView, attempt: AttemptView, style: Style): string {
  if (!effect.settled) {
    const note = attempt.end === null ? 'in flight' : 'started; no outcome in this attempt';
    return `${style.warn('…')} ${effect.name}  ${style.warn(note)}`;
  }
  const mark =
    effect.outcome === 'ok'
      ? style.good('✓')
      : effect.outcome === 'error'
        ? style.bad('✗')
        : style.alarm('?');
  const details =
    effect.settledIn === undefined
      ? style.faint(settledDetails(effect))
      : style.warn(
          `in flight when this attempt stopped; found so by ${attemptName(effect.settledIn)}`,
        );
  return `${mark} ${effect.name}  ${describeOutcome(effect, style)}${details === '' ? '' : `  ${details}`}`;
}

/**
 * How an abandoned attempt stopped, in the words of its end line; history a version before these words wrote
 * (`crashed`, `released`) shows its own word.
 */
const abandonedHow: Partial<Record<AbandonedHow, string>> = {
  taken_over: '✗ stopped without ending the run (crashed, or lost its lease)',
  handed_over: '⇥ handed the run over (its worker shut down)',
  suspended: '⏸ suspended (its store kept failing)',
};

function attemptEnd(end: AttemptEnd, style: Style): string {
  if (end.how === 'waiting') {
    return style.warn(
      `⏸ waiting${end.signals.length === 0 ? '' : ` for ${end.signals.join(', ')}`}${end.until === null ? '' : ` until ${formatTime(end.until)}`}`,
    );
  }
  if (end.how === 'ended') {
    return `${style.strong('ended')} ${statusPaint(end.status, style)(end.status)}${end.code === undefined ? '' : ` ${end.code}`}`;
  }
  const how = abandonedHow[end.how] ?? `✗ stopped (${String(end.how)})`;
  const next =
    end.by === null
      ? ''
      : `; ${end.how === 'taken_over' ? 'taken over' : 'continued'} by ${end.by}`;
  return style.warn(`${how}${next}; its last checkpointed event was #${end.lastSeq}`);
}
