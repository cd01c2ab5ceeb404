/**
 * What a takeover does to a run's event stream, said where it shows. The attempt that takes a run over records,
 * after its own start, what the crashed attempt journaled (its model answers, the calls it started) at that
 * attempt's times; a call it finds in flight then settles, outcome unknown, with a duration that runs from its
 * start to the takeover. Read in order, times would go backwards and the call would look like the new
 * attempt's. `EventNotes` remembers when attempts and calls started and says so on those lines.
 */
import type { RunEvent } from '@cairn/sdk';
import { renderEventLine } from './event-line.js';
import type { Style } from './style.js';

export class EventNotes {
  /** When the attempt now running started, and its epoch. */
  private attempt: { at: number; epoch: number } | undefined;
  /** Under which attempt's epoch (by time) each effect and unit started. */
  private readonly started = new Map<string, number | undefined>();
  /** Epochs by when their attempts started, oldest first. */
  private readonly attempts: Array<{ at: number; epoch: number }> = [];

  constructor(private readonly style: Style) {}

  /** The event's line, with what the takeover changed about it. */
  line(event: RunEvent): string {
    if (event.type === 'attempt.started') {
      this.attempt = { at: event.at, epoch: event.epoch };
      this.attempts.push(this.attempt);
      return renderEventLine(event, this.style);
    }
    const before = this.attempt !== undefined && event.at < this.attempt.at;
    const epoch = this.epochAt(event.at);
    if (event.type === 'effect.started') this.started.set(`effect ${event.effectId}`, epoch);
    if (event.type === 'unit.started') this.started.set(`unit ${event.unit}`, epoch);
    const settled =
      event.type === 'effect.settled'
        ? `effect ${event.effectId}`
        : event.type === 'unit.settled'
          ? `unit ${event.unit}`
          : undefined;
    if (settled !== undefined && this.attempt !== undefined && !before) {
      const startedUnder = this.started.get(settled);
      if (startedUnder !== undefined && startedUnder !== this.attempt.epoch) {
        // Its duration would run from its start to the takeover: not how long it took.
        const { ms: _ms, ...rest } = event as Extract<RunEvent, { ms?: number }>;
        const note =
          event.type === 'effect.settled'
            ? ` (in flight when attempt epoch ${startedUnder} stopped)`
            : ` (begun by attempt epoch ${startedUnder})`;
        return renderEventLine(rest, this.style) + this.style.warn(note);
      }
    }
    const line = renderEventLine(event, this.style);
    return before && epoch !== undefined
      ? line + this.style.faint(` (attempt epoch ${epoch}'s, recorded at the takeover)`)
      : line;
  }

  /** The epoch of the attempt running at `at`, by when attempts started. */
  private epochAt(at: number): number | undefined {
    for (let index = this.attempts.length - 1; index >= 0; index -= 1) {
      if (this.attempts[index]!.at <= at) return this.attempts[index]!.epoch;
    }
    return this.attempts[0]?.epoch;
  }
}
