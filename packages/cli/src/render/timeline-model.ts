/**
 * A run's history grouped as an operator reads it: attempts (one per lease holder), in each the trips or nodes
 * it worked on, in each the effects with their outcomes. Pure: events in, a model out; the text and JSON of
 * `runs timeline` are made from it.
 */
import type { AbandonedHow, HistoryUsage, RunEvent, RunStatus } from '@cairn/sdk';

/** The events of an effect: their fields are what an effect view keeps of them. */
type EffectEvent = Extract<RunEvent, { effectId: string }>;

/** One effect as one attempt saw it: what its events said (`outcome` ... `childRunId` once it settled). */
export type EffectView = Pick<
  EffectEvent,
  'effectId' | 'name' | 'kind' | 'outcome' | 'code' | 'ms' | 'bytes' | 'usage' | 'childRunId'
> & {
  /** When this attempt saw it start; null when it started in an earlier attempt. */
  startedAt: number | null;
  /** Settled in this attempt. An effect an attempt started and never settled was in flight when it ended. */
  settled: boolean;
  /** A later attempt settled it: the one that took the run over and found it in flight (outcome unknown). */
  settledIn?: AttemptRef;
};

/** An attempt, as another one names it. */
export interface AttemptRef {
  epoch: number | null;
  owner: string | null;
}

/** A trip (`trip-3`) or a node (`node/fetch`) as one attempt worked on it. */
export interface UnitView {
  unit: string;
  label: string;
  /** It started in an earlier attempt: this one carried it on. */
  continued: boolean;
  settled: boolean;
  /** A later attempt settled it: it took the run over while this attempt was in the unit. */
  settledIn?: AttemptRef;
  ms?: number;
  usage?: HistoryUsage;
  effects: EffectView[];
}

/** What an attempt did, in order. */
export type AttemptItem =
  | ({ type: 'unit' } & UnitView)
  | ({ type: 'effect' } & EffectView)
  | { type: 'signals'; at: number; names: string[] }
  | { type: 'waiting'; at: number; until: number | null; signals: string[] };

/**
 * How an attempt ended: abandoned (taken over, handed over or suspended, as the next holder recorded; `by` is
 * that holder), waiting, or ending the run.
 */
export type AttemptEnd =
  | { how: AbandonedHow; lastSeq: number; by: string | null }
  | { how: 'waiting'; until: number | null; signals: string[] }
  | { how: 'ended'; status: RunStatus; code?: string };

/** One holder's attempt at the run. */
export interface AttemptView {
  /** Null for events whose attempt's start was dropped from a bounded history. */
  epoch: number | null;
  owner: string | null;
  /** The holder this attempt took the run from, when that one never gave it up. */
  takenFrom: string | null;
  startedAt: number | null;
  items: AttemptItem[];
  /** Null while the attempt goes on (or when nothing says how it ended). */
  end: AttemptEnd | null;
}

/** The grouped history of one run. */
export interface TimelineModel {
  /** Events up to this seq were dropped from the bounded history. */
  truncatedAt: number | null;
  attempts: AttemptView[];
  ended: { status: RunStatus; code?: string; at: number } | null;
}

/**
 * Groups a run's events (oldest first, as `client.events` returns them). An event goes to the attempt that was
 * running when it happened: an attempt that takes a run over records what the crashed one journaled (its model
 * answers, the calls it started) at that attempt's times, after its own start, and that work belongs to the
 * attempt that did it. What such work settles later (a call found in flight: outcome unknown) stays where it
 * started, and says which attempt settled it, as `cairn ui`'s timeline shows it.
 */
export function buildTimeline(events: readonly RunEvent[]): TimelineModel {
  const model: TimelineModel = { truncatedAt: null, attempts: [], ended: null };
  const current = (): AttemptView => {
    const last = model.attempts.at(-1);
    if (last !== undefined) return last;
    const orphan: AttemptView = {
      epoch: null,
      owner: null,
      takenFrom: null,
      startedAt: null,
      items: [],
      end: null,
    };
    model.attempts.push(orphan);
    return orphan;
  };
  /** The attempt running at `at`: the last one that started by then (the first one for earlier events). */
  const attemptAt = (at: number): AttemptView => {
    for (let index = model.attempts.length - 1; index > 0; index -= 1) {
      const attempt = model.attempts[index]!;
      if (attempt.startedAt === null || attempt.startedAt <= at) return attempt;
    }
    return model.attempts[0] ?? current();
  };
  const refOf = (attempt: AttemptView): AttemptRef => ({
    epoch: attempt.epoch,
    owner: attempt.owner,
  });
  const findUnit = (attempt: AttemptView, unit: string): UnitView | undefined =>
    attempt.items.find((item) => item.type === 'unit' && item.unit === unit) as
      UnitView | undefined;
  /** An attempt before `attempt` that left `unit` unsettled, when `attempt` has no view of its own. */
  const leftOpen = (attempt: AttemptView, unit: string): UnitView | undefined => {
    if (findUnit(attempt, unit) !== undefined) return undefined;
    const before = model.attempts.slice(0, model.attempts.indexOf(attempt));
    return before
      .map((earlier) => findUnit(earlier, unit))
      .filter((view) => view !== undefined && !view.settled)
      .at(-1);
  };
  const unitOf = (attempt: AttemptView, unit: string, label: string): UnitView => {
    const found = findUnit(attempt, unit);
    if (found !== undefined) return found;
    const created: AttemptItem = {
      type: 'unit',
      unit,
      label,
      continued: true,
      settled: false,
      effects: [],
    };
    attempt.items.push(created);
    return created;
  };
  /** The view an earlier attempt has of an effect it started and never settled, for a settle made later. */
  const startedBefore = (attempt: AttemptView, effectId: string): EffectView | undefined => {
    const before = model.attempts.slice(0, model.attempts.indexOf(attempt));
    for (const earlier of before.reverse()) {
      for (const item of earlier.items) {
        const effects = item.type === 'unit' ? item.effects : item.type === 'effect' ? [item] : [];
        const view = effects.find((effect) => effect.effectId === effectId);
        if (view !== undefined) return view.settled ? undefined : view;
      }
    }
    return undefined;
  };
  const effectOf = (event: EffectEvent): EffectView => {
    const attempt = attemptAt(event.at);
    const container =
      event.unit === null ? undefined : unitOf(attempt, event.unit, unitLabel(event.unit)).effects;
    const found =
      container !== undefined
        ? container.find((effect) => effect.effectId === event.effectId)
        : (attempt.items.find(
            (item) => item.type === 'effect' && item.effectId === event.effectId,
          ) as EffectView | undefined);
    if (found !== undefined) return found;
    const view: EffectView = {
      effectId: event.effectId,
      name: event.name,
      kind: event.kind,
      startedAt: null,
      settled: false,
    };
    if (container !== undefined) container.push(view);
    else attempt.items.push({ type: 'effect', ...view });
    // The attempt's list holds a copy when it is not in a unit: hand that one out.
    return container !== undefined ? view : (attempt.items.at(-1) as EffectView);
  };

  let abandoned: AttemptView | undefined;
  for (const event of events) {
    switch (event.type) {
      case 'history.truncated':
        model.truncatedAt = event.seq;
        break;
      case 'attempt.started':
        if (abandoned !== undefined && abandoned.end?.how !== 'ended') {
          // The attempt that recorded the abandonment is this one: it took the run over.
          abandoned.end = {
            ...(abandoned.end as Extract<AttemptEnd, { by: string | null }>),
            by: event.owner,
          };
        }
        abandoned = undefined;
        model.attempts.push({
          epoch: event.epoch,
          owner: event.owner,
          takenFrom: event.takenFrom,
          startedAt: event.at,
          items: [],
          end: null,
        });
        break;
      case 'attempt.abandoned': {
        // Recorded by the next attempt just before its own start, about the attempt it replaced.
        abandoned = model.attempts.filter((attempt) => attempt.epoch === event.epoch).at(-1);
        if (abandoned !== undefined)
          abandoned.end = { how: event.how, lastSeq: event.lastSeq, by: null };
        break;
      }
      case 'unit.started': {
        const unit = unitOf(attemptAt(event.at), event.unit, event.label);
        if (unit.effects.length === 0 && !unit.settled) unit.continued = false;
        break;
      }
      case 'unit.settled': {
        const attempt = attemptAt(event.at);
        const open = leftOpen(attempt, event.unit);
        const unit = open ?? unitOf(attempt, event.unit, event.label);
        if (open !== undefined) {
          open.settledIn = refOf(attempt);
          // Its duration would run from its start to the takeover: not how long it took.
          delete unit.ms;
        }
        unit.settled = true;
        if (event.ms !== undefined && open === undefined) unit.ms = event.ms;
        if (event.usage !== undefined) unit.usage = event.usage;
        break;
      }
      case 'effect.started':
        effectOf(event).startedAt = event.at;
        break;
      case 'effect.settled': {
        const attempt = attemptAt(event.at);
        const earlier = startedBefore(attempt, event.effectId);
        const inAttempt = earlier === undefined;
        const effect = earlier ?? effectOf(event);
        if (!inAttempt) effect.settledIn = refOf(attempt);
        effect.settled = true;
        if (event.outcome !== undefined) effect.outcome = event.outcome;
        if (event.code !== undefined) effect.code = event.code;
        // Settled by a later attempt, its duration would run from its start to the takeover.
        if (event.ms !== undefined && inAttempt) effect.ms = event.ms;
        if (event.bytes !== undefined) effect.bytes = event.bytes;
        if (event.usage !== undefined) effect.usage = event.usage;
        if (event.childRunId !== undefined) effect.childRunId = event.childRunId;
        break;
      }
      case 'signals':
        attemptAt(event.at).items.push({ type: 'signals', at: event.at, names: [...event.names] });
        break;
      case 'waiting': {
        const attempt = current();
        attempt.items.push({
          type: 'waiting',
          at: event.at,
          until: event.until,
          signals: [...event.signals],
        });
        attempt.end = { how: 'waiting', until: event.until, signals: [...event.signals] };
        break;
      }
      case 'ended': {
        const end = {
          status: event.status,
          ...(event.code === undefined ? {} : { code: event.code }),
        };
        model.ended = { ...end, at: event.at };
        const attempt = model.attempts.at(-1);
        // An attempt that already ended otherwise (it waited, it crashed) did not end the run itself.
        if (attempt !== undefined && attempt.end === null) attempt.end = { how: 'ended', ...end };
        break;
      }
    }
  }
  return model;
}

/** `trip-3` → `trip 3`, `node/fetch` → `node fetch`: the label a unit's own events would carry. */
function unitLabel(unit: string): string {
  return unit.replace(/^trip-/, 'trip ').replace(/^node\//, 'node ');
}

/** The child runs the timeline's effects name, in the order they ran. */
export function childRunsOf(model: TimelineModel): string[] {
  const ids: string[] = [];
  for (const attempt of model.attempts) {
    for (const item of attempt.items) {
      const effects = item.type === 'unit' ? item.effects : item.type === 'effect' ? [item] : [];
      for (const effect of effects) {
        if (effect.childRunId !== undefined && !ids.includes(effect.childRunId))
          ids.push(effect.childRunId);
      }
    }
  }
  return ids;
}

/** Everything `runs timeline` shows of a run; its `--json` form. */
export interface RunTimeline extends TimelineModel {
  runId: string;
  kind: string;
  name: string;
  status: RunStatus;
  createdAt: number;
  updatedAt: number;
  /**
   * Its payloads are encrypted and the command has no codec (`--codec`): its checkpoint, and so its history, cannot
   * be read, and the timeline holds only what the record says.
   */
  encrypted: boolean;
  /** The events the timeline was grouped from, as `client.events` returned them. */
  events: RunEvent[];
  /** A planner run's plan and each node's state (no nodes before the plan is frozen); null for other runs. */
  plan: import('@cairn/sdk').PlanView | null;
  /** The run's child runs, each with the plan node that ran it when known. */
  children: Array<{ nodeId: string | null; timeline: RunTimeline }>;
}
