/**
 * Draws a run's timeline (`timeline-fold.ts` folds it): a lane per attempt on its own time axis, a row per trip or
 * node with its bar and its effects' bars, and between two lanes what happened there (a takeover, a handover).
 * Bars are placed through `element.style` (the CSS object model), which the page's CSP allows, unlike inline
 * style attributes.
 */
import type { RunDetail } from './api-types.js';
import { append, badge, el, runLink } from './dom.js';
import { fmtBytes, fmtMs, fmtTime, fmtUsage } from './format.js';
import type { Timeline, TimelineEffect, TimelineLane, TimelineRow } from './timeline-fold.js';

/** Where a bar goes on its lane's axis, as CSS percentages. */
type Place = (start: number, end: number | null) => { left: string; width: string };

/** The timeline of a run, or a line saying why it has none yet. */
export function renderTimeline(model: Timeline, run: RunDetail | null): HTMLElement {
  const root = el('div', { class: 'timeline' });
  if (model.truncatedAt !== null) {
    append(
      root,
      el('div', {
        class: 'notice',
        text:
          'The oldest events of this run were dropped to keep its history bounded (up to event #' +
          `${model.truncatedAt}).`,
      }),
    );
  }
  if (run?.encrypted === true) {
    // Its history is in its encrypted checkpoint: the events served are at most the end its record tells of,
    // which the header shows already.
    append(root, el('p', { class: 'muted', text: 'Its history is encrypted with its payloads.' }));
    return root;
  }
  if (model.lanes.length === 0) {
    append(
      root,
      el('p', {
        class: 'muted',
        text:
          run?.status === 'queued'
            ? 'Queued: no worker has claimed this run yet.'
            : 'No events recorded for this run yet.',
      }),
    );
  }
  model.lanes.forEach((lane, index) => {
    const before = model.lanes[index - 1];
    if (before !== undefined) append(root, transition(before, lane, index));
    append(root, renderLane(lane, index, model, run));
  });
  return root;
}

// How an attempt that neither ended the run nor put it to wait stopped (the sdk's AbandonedHow), in words; a
// newer sdk's value the page does not know yet is shown as it is.
const abandonedWords: Readonly<Record<string, string | undefined>> = {
  taken_over: 'taken over',
  handed_over: 'handed over',
  suspended: 'suspended',
};

const abandonedText = ({ how }: { how: string }): string =>
  abandonedWords[how] ?? how.replace(/_/g, ' ');

function transition(before: TimelineLane, after: TimelineLane, index: number): HTMLElement {
  const how = before.abandoned?.how ?? null;
  const takeover = after.takenFrom !== null || how === 'taken_over';
  const gap = after.start - before.end;
  let text = takeover
    ? `takeover: ${after.owner} took the run over from ${after.takenFrom ?? before.owner}`
    : how === 'suspended'
      ? `resumed: ${after.owner} resumed the run after ${before.owner ?? 'its holder'} suspended it ` +
        '(its store kept failing)'
      : `handover: ${after.owner} resumed the run` +
        (before.owner ? ` after ${before.owner}` : '') +
        (how === 'handed_over' ? ' handed it over' : '');
  if (gap > 0) text += `, ${fmtMs(gap)} later`;
  if (before.abandoned) {
    text += `; attempt ${index}'s last checkpointed event was #${before.abandoned.lastSeq}`;
  }
  return el('div', {
    class: takeover ? 'takeover' : 'takeover handover',
    'data-kind': takeover ? 'takeover' : 'handover',
    text,
  });
}

function renderLane(
  lane: TimelineLane,
  index: number,
  model: Timeline,
  run: RunDetail | null,
): HTMLElement {
  const last = index === model.lanes.length - 1;
  const open = last && model.ended === null && run?.held === true;
  const node = el('section', {
    class: lane.abandoned ? 'lane abandoned' : 'lane',
    'data-epoch': lane.epoch ?? '',
  });
  append(
    node,
    el('div', { class: 'lane-head' }, [
      el('span', {
        class: 'title',
        text: lane.epoch === null ? 'earlier attempt' : `attempt ${index + 1}`,
      }),
      lane.epoch === null ? null : el('span', { class: 'muted', text: `epoch ${lane.epoch}` }),
      lane.owner ? el('span', { class: 'mono', text: lane.owner }) : null,
      el('span', {
        class: 'muted',
        text: `${fmtTime(lane.start)}, ${fmtMs(lane.end - lane.start)}`,
      }),
      lane.abandoned ? badge(`abandoned: ${abandonedText(lane.abandoned)}`, 'unknown') : null,
      open ? badge('running', 'running') : null,
    ]),
  );
  const span = Math.max(lane.end - lane.start, 1);
  const place: Place = (start, end) => {
    const from = Math.min(Math.max(start, lane.start), lane.end);
    const to = end === null ? lane.end : Math.min(Math.max(end, from), lane.end);
    return {
      left: `${(((from - lane.start) / span) * 100).toFixed(3)}%`,
      width: `${(((to - from) / span) * 100).toFixed(3)}%`,
    };
  };
  for (const row of lane.rows) append(node, renderRow(row, place, open));
  if (lane.marks.length > 0) {
    append(
      node,
      el(
        'div',
        { class: 'marks' },
        lane.marks.map((mark) => el('div', { text: mark })),
      ),
    );
  }
  return node;
}

/** A bar, placed. */
function bar(className: string, title: string, place: { left: string; width: string }) {
  const node = el('div', { class: className, title });
  Object.assign(node.style, place);
  return node;
}

function renderRow(row: TimelineRow, place: Place, open: boolean): HTMLElement {
  const meta: string[] = [];
  if (row.end !== null) meta.push(fmtMs(row.ms));
  else meta.push(row.settledIn ? '' : open ? 'running' : 'not settled');
  if (row.usage) meta.push(fmtUsage(row.usage));
  if (row.settledIn) meta.push('settled by a later attempt');
  const rowBar = bar(
    row.end === null || row.settledIn ? 'bar open' : 'bar',
    row.label,
    place(row.start, row.settledIn ? null : row.end),
  );
  const effectBars = row.effects.map((effect) =>
    bar(
      `bar ${effect.outcome ?? 'open'}`,
      effect.name,
      place(effect.start, effect.settledIn ? null : effect.end),
    ),
  );
  return el('div', { class: 'row', 'data-unit': row.key ?? 'planning' }, [
    el('div', { class: 'row-label' }, [
      el('div', { class: 'name', text: row.label }),
      el('div', { class: 'meta', text: meta.filter(Boolean).join(' · ') }),
    ]),
    el('div', {}, [
      el('div', { class: 'track' }, rowBar),
      effectBars.length > 0 ? el('div', { class: 'effect-track' }, effectBars) : null,
      row.effects.length > 0
        ? el(
            'div',
            { class: 'effects' },
            row.effects.map((effect) => renderEffect(effect, open)),
          )
        : null,
    ]),
  ]);
}

function renderEffect(effect: TimelineEffect, open: boolean): HTMLElement {
  const outcome =
    effect.outcome === 'unknown'
      ? 'outcome unknown'
      : effect.outcome === 'error'
        ? 'error'
        : effect.outcome === 'ok'
          ? 'ok'
          : effect.settledIn
            ? 'settled later'
            : open
              ? 'in flight'
              : 'never settled';
  const details: string[] = [];
  if (effect.code) details.push(effect.code);
  if (typeof effect.ms === 'number') details.push(fmtMs(effect.ms));
  if (typeof effect.bytes === 'number') details.push(fmtBytes(effect.bytes));
  if (effect.usage) details.push(fmtUsage(effect.usage));
  if (effect.settledIn) details.push('settled by a later attempt');
  return el(
    'span',
    {
      class: `effect ${effect.outcome ?? 'open'}`,
      'data-outcome': effect.outcome ?? 'open',
      'data-effect': effect.id,
    },
    [
      el('span', { class: 'mono', text: effect.name }),
      ' ',
      el('span', { class: 'outcome', text: outcome }),
      details.length > 0 ? el('span', { class: 'muted', text: ` · ${details.join(' · ')}` }) : null,
      effect.childRunId ? [' · child ', runLink(effect.childRunId)] : null,
    ],
  );
}
