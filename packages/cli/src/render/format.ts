/** How times, durations, token counts and values read in a terminal. */
import type { HistoryUsage, JsonValue } from '@cairn/sdk';

/** A point in time, in UTC to the second: `2026-12-02 14:26:28`. */
export function formatTime(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

/** The time of day, in UTC to the millisecond, for lines that follow each other closely. */
export function formatClock(ms: number): string {
  return new Date(ms).toISOString().slice(11, 23);
}

/** A duration: `840 ms`, `2.4 s`, `3 m 12 s`, `2 h 5 m`. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1_000);
  if (seconds < 3_600) return `${Math.floor(seconds / 60)} m ${seconds % 60} s`;
  return `${Math.floor(seconds / 3_600)} h ${Math.floor((seconds % 3_600) / 60)} m`;
}

/** Token usage: `120 in / 14 out`. */
export function formatUsage(usage: HistoryUsage): string {
  return `${usage.inputTokens} in / ${usage.outputTokens} out`;
}

/** A JSON value on one line, cut to `max` characters: text as it is, anything else as JSON. */
export function formatValue(value: JsonValue | undefined, max = 200): string {
  if (value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const line = text.replace(/\s*\n\s*/g, ' ');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
