/**
 * The run timeline's model: `buildTimeline` folds a run's `RunEvent`s (oldest first) into one lane per attempt,
 * each with rows for its trips or nodes and their effects; `timeline.ts` draws it. The page folds the whole list
 * again at every new event: a history is bounded, and one fold is simpler to trust than an incremental one.
 *
 * Each lane has its own time axis, from its first event to its last: attempts are separated by lease waits
 * (seconds) while trips take milliseconds, so one axis for the run would squash every bar to a line. Something
 * started in one attempt and settled in a later one (a tool call in flight at a crash) stays in the lane where
 * it started, cut at that lane's end, and says that a later attempt settled it.
 *
 * An attempt that was taken over lost nothing the history shows: the history is written with checkpoints, and
 * the attempt that takes over re-records what the journal kept. So `attempt.abandoned`'s `lastSeq` is shown
 * (what was lost came after it), and no event is dropped for it.
 */
import type { AbandonedHow, EffectOutcomeStatus, HistoryUsage, RunEvent } from './api-types.js';
import { fmtDate, fmtTime } from './format.js';

type EventOf<T extends RunEvent['type']> = Extract<RunEvent, { type: T }>;

/** An effect (a model call, a tool call, a node's capability) in the lane where it started. */
export interface TimelineEffect {
  id: string;
  name: string;
  kind: string;
  start: number;
  end: number | null;
  seq: number;
  outcome: EffectOutcomeStatus | null;
  code: string | undefined;
  ms: number | undefined;
  bytes: number | undefined;
  usage: HistoryUsage | undefined;
  childRunId: string | undefined;
  lane: TimelineLane;
  /** The later lane that settled it, or null when its own lane did (or nobody did yet). */
  settledIn: TimelineLane | null;
}

/** A trip or a node (`key` its unit), or a lane's planning calls (`key` null). */
export interface TimelineRow {
  key: string | null;
  label: string;
  start: number;
  end: number | null;
  ms: number | null;
  usage: HistoryUsage | null;
  seq: number;
  lane: TimelineLane;
  settledIn: TimelineLane | null;
  effects: TimelineEffect[];
}

/** One attempt: its holder, its time axis, its rows and its marks (signals, waits, the end). */
export interface TimelineLane {
  /** Null for the lane of events whose attempt the truncated history no longer has. */
  epoch: number | null;
  owner: string | null;
  takenFrom: string | null;
  startedAt: number;
  start: number;
  end: number;
  seq: number;
  abandoned: { how: AbandonedHow; lastSeq: number } | null;
  rows: TimelineRow[];
  marks: string[];
  planning: TimelineRow | null;
}

/** A run's history, folded. */
export interface Timeline {
  lanes: TimelineLane[];
  /** The last `seq` the bounded history dropped, or null when it has every event. */
  truncatedAt: number | null;
  ended: EventOf<'ended'> | null;
  /** What the run's units and planning calls used. */
  usage: HistoryUsage | null;
}

function newLane(
  event: Pick<EventOf<'attempt.started'>, 'at' | 'seq'> & {
    epoch: number | null;
    owner: string | null;
    takenFrom: string | null;
  },
): TimelineLane {
  return {
    epoch: event.epoch,
    owner: event.owner,
    takenFrom: event.takenFrom,
    startedAt: event.at,
    start: event.at,
    end: event.at,
    seq: event.seq,
    abandoned: null,
    rows: [],
    marks: [],
    planning: null,
  };
}

/** Folds a run's events, oldest first, into its timeline. */
export function buildTimeline(events: readonly RunEvent[]): Timeline {
  const model: Timeline = { lanes: [], truncatedAt: null, ended: null, usage: null };
  const units = new Map<string, TimelineRow>();
  const effects = new Map<string, TimelineEffect>();

  // The lane of an event: the attempt it comes after, or an earlier one when it happened before that attempt
  // began. A new attempt re-records what the crashed one had journaled (its model answer, the tool call it
  // started), with the crashed attempt's times: that work belongs in the crashed attempt's lane.
  const laneAt = (at: number): TimelineLane => {
    const [first] = model.lanes;
    if (first === undefined) {
      // History truncated before the first attempt it kept: its events still need a lane.
      const lane = newLane({ epoch: null, owner: null, takenFrom: null, at, seq: 0 });
      model.lanes.push(lane);
      return lane;
    }
    for (let index = model.lanes.length - 1; index > 0; index -= 1) {
      const lane = model.lanes[index]!;
      if (lane.startedAt <= at) return lane;
    }
    return first;
  };
  const touch = (target: TimelineLane, at: number) => {
    if (at < target.start) target.start = at;
    if (at > target.end) target.end = at;
  };
  const addUsage = (usage: HistoryUsage | undefined) => {
    if (usage === undefined) return;
    model.usage ??= { inputTokens: 0, outputTokens: 0 };
    model.usage.inputTokens += usage.inputTokens;
    model.usage.outputTokens += usage.outputTokens;
  };
  const rowFor = (key: string | null, label: string, at: number, seq: number): TimelineRow => {
    const lane = laneAt(at);
    touch(lane, at);
    const row: TimelineRow = {
      key,
      label,
      start: at,
      end: null,
      ms: null,
      usage: null,
      seq,
      lane,
      settledIn: null,
      effects: [],
    };
    lane.rows.push(row);
    if (key !== null) units.set(key, row);
    return row;
  };
  const planningRow = (at: number, seq: number): TimelineRow => {
    const lane = laneAt(at);
    lane.planning ??= rowFor(null, 'planning', at, seq);
    return lane.planning;
  };
  const effectOf = (event: EventOf<'effect.started' | 'effect.settled'>): TimelineEffect => {
    const known = event.type === 'effect.started' ? undefined : effects.get(event.effectId);
    if (known !== undefined) return known;
    const start =
      event.type === 'effect.started' || event.ms === undefined ? event.at : event.at - event.ms;
    const owner =
      event.unit === null
        ? planningRow(start, event.seq)
        : (units.get(event.unit) ?? rowFor(event.unit, event.unit, start, event.seq));
    const effect: TimelineEffect = {
      id: event.effectId,
      name: event.name,
      kind: event.kind,
      start,
      end: null,
      seq: event.seq,
      outcome: null,
      code: undefined,
      ms: undefined,
      bytes: undefined,
      usage: undefined,
      childRunId: undefined,
      lane: owner.lane,
      settledIn: null,
    };
    owner.effects.push(effect);
    effects.set(event.effectId, effect);
    return effect;
  };

  for (const event of events) {
    if (event.type === 'history.truncated') {
      model.truncatedAt = event.seq;
      continue;
    }
    if (event.type === 'attempt.started') {
      model.lanes.push(newLane(event));
      continue;
    }
    if (event.type === 'attempt.abandoned') {
      const gone = model.lanes.find((lane) => lane.epoch === event.epoch) ?? laneAt(event.at);
      gone.abandoned = { how: event.how, lastSeq: event.lastSeq };
      continue;
    }
    const current = laneAt(event.at);
    touch(current, event.at);
    switch (event.type) {
      case 'unit.started':
        rowFor(event.unit, event.label, event.at, event.seq);
        break;
      case 'unit.settled': {
        const row =
          units.get(event.unit) ??
          rowFor(event.unit, event.label, event.startedAt ?? event.at, event.seq);
        row.end = event.at;
        row.ms = event.ms ?? event.at - row.start;
        row.usage = event.usage ?? null;
        if (row.lane !== current) row.settledIn = current;
        addUsage(event.usage);
        break;
      }
      case 'effect.started':
        effectOf(event);
        break;
      case 'effect.settled': {
        const effect = effectOf(event);
        effect.end = event.at;
        effect.outcome = event.outcome ?? null;
        effect.code = event.code;
        effect.ms = event.ms;
        effect.bytes = event.bytes;
        effect.usage = event.usage;
        effect.childRunId = event.childRunId;
        if (effect.lane !== current) effect.settledIn = current;
        // A unit's usage counts its effects'; a planning call belongs to no unit.
        if (event.unit === null) addUsage(event.usage);
        break;
      }
      case 'signals':
        current.marks.push(`${fmtTime(event.at)} signals: ${event.names.join(', ')}`);
        break;
      case 'waiting':
        current.marks.push(
          `${fmtTime(event.at)} waiting` +
            (event.signals.length > 0 ? ` for ${event.signals.join(', ')}` : '') +
            (event.until !== null ? ` until ${fmtDate(event.until)}` : ''),
        );
        break;
      case 'ended':
        model.ended = event;
        current.marks.push(
          `${fmtTime(event.at)} ended ${event.status}${event.code ? ` (${event.code})` : ''}`,
        );
        break;
    }
  }
  // A planning row is its planning calls: it has no unit events of its own.
  for (const lane of model.lanes) {
    const row = lane.planning;
    if (row === null || row.effects.some((effect) => effect.end === null)) continue;
    row.end = Math.max(...row.effects.map((effect) => effect.end ?? row.start));
    row.ms = row.end - row.start;
  }
  return model;
}
