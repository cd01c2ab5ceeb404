/**
 * How the page writes durations, times, sizes and token counts. Pure: no DOM, so the timeline's fold, which uses
 * them for its marks, runs in a unit test as it runs in the page.
 */
import type { HistoryUsage } from './api-types.js';

/** A duration: `<1 ms`, `420 ms`, `2.35 s`, `1.5 min`, `2.0 h`; empty for what is not a number. */
export const fmtMs = (ms: number | null | undefined): string => {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return '';
  if (ms < 1) return '<1 ms';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
};

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** A time of day to the millisecond, in the browser's time zone: events of one run are close together. */
export const fmtTime = (at: number): string => {
  const date = new Date(at);
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
};

/** A date and time in the browser's locale. */
export const fmtDate = (at: number): string => new Date(at).toLocaleString();

/** How long ago, from the browser's clock. */
export const fmtAgo = (at: number): string => {
  const ms = Date.now() - at;
  return ms < 1000 ? 'just now' : `${fmtMs(ms)} ago`;
};

/** Tokens in and out. */
export const fmtUsage = (usage: HistoryUsage): string =>
  `${usage.inputTokens} in / ${usage.outputTokens} out tokens`;

/** A size in bytes or kilobytes. */
export const fmtBytes = (bytes: number): string =>
  bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KB`;
