import { isBusy } from '../load.js';
import type { BenchReport, Row } from '../report.js';
import { figure, type Figure } from '../stats.js';

/** One metric of a row on both sides, over the rounds. */
export interface ComparedMetric {
  key: string;
  label: string;
  unit: string;
  /** This checkout's figure over the rounds (a round's value is its report's median); absent if never measured. */
  this?: Figure;
  /** The other ref's, the same way. */
  other?: Figure;
  /** This ÷ the other in each round where both sides measured it, in round order. */
  ratio?: Figure;
}

/** One bench row on both sides, or why a side has no figures for it. */
export interface ComparedRow {
  key: string;
  title: string;
  metrics: ComparedMetric[];
  notes: string[];
}

/** Each side's reports, one per round in the order they ran; undefined where that run wrote none. */
export interface RoundReports {
  this: ReadonlyArray<BenchReport | undefined>;
  other: ReadonlyArray<BenchReport | undefined>;
}

/** The key of the row made of each side's own ratios and checks. */
export const ratiosRowKey = 'ratios';

type Side = 'this' | 'other';

/** A figure read from JSON, where NaN was written as null. */
function numberOf(value: unknown): number {
  return typeof value === 'number' ? value : Number.NaN;
}

function figureOf(values: readonly number[]): Figure | undefined {
  const measured = values.filter(Number.isFinite);
  return measured.length === 0 ? undefined : figure(measured);
}

/** The union of keys over both sides, in the order this side lists them, then the other's own. */
function unionOf(lists: ReadonlyArray<ReadonlyArray<{ key: string }>>): string[] {
  const keys: string[] = [];
  for (const list of lists) for (const { key } of list) if (!keys.includes(key)) keys.push(key);
  return keys;
}

/** Metrics compared by key: per round, each side's value, and their ratio where both have one. */
function compareMetrics(
  entries: Record<
    Side,
    ReadonlyArray<ReadonlyArray<{ key: string; label: string; unit: string; value: number }>>
  >,
): ComparedMetric[] {
  const metrics: ComparedMetric[] = [];
  for (const key of unionOf([...entries.this, ...entries.other])) {
    const at = (side: Side) => entries[side].map((list) => list.find((m) => m.key === key));
    const first = [...at('this'), ...at('other')].find((m) => m !== undefined)!;
    const values = (side: Side) => at(side).map((m) => m?.value ?? Number.NaN);
    const mine = values('this');
    const theirs = values('other');
    const ratios = mine.map((value, round) => value / (theirs[round] ?? Number.NaN));
    const compared: ComparedMetric = { key, label: first.label, unit: first.unit };
    const thisFigure = figureOf(mine);
    const otherFigure = figureOf(theirs);
    const ratioFigure = figureOf(ratios);
    if (thisFigure !== undefined) compared.this = thisFigure;
    if (otherFigure !== undefined) compared.other = otherFigure;
    if (ratioFigure !== undefined) compared.ratio = ratioFigure;
    metrics.push(compared);
  }
  return metrics;
}

/**
 * Lines the rounds into one row per bench row: every metric of each side over the rounds, and the ratio of the
 * two in each round (both ran back to back, so a burst of noise lands on both halves of a round's ratio). A
 * row missing on one side (added or removed by the change), or not measured there, is said in its notes.
 */
export function compareReports(
  rounds: RoundReports,
  options: { only?: readonly string[]; names: Record<Side, string> },
): ComparedRow[] {
  const reports = {
    this: rounds.this.filter((report) => report !== undefined),
    other: rounds.other.filter((report) => report !== undefined),
  };
  const roundName = (round: number) => (rounds.this.length > 1 ? `, round ${round + 1}` : '');
  const keys = options.only ?? unionOf([...reports.this, ...reports.other].map((r) => r.rows));
  const rows: ComparedRow[] = [];
  for (const key of keys) {
    const find = (side: Side) =>
      rounds[side].map((report) => report?.rows.find((r) => r.key === key));
    const found = { this: find('this'), other: find('other') };
    const any = [...found.this, ...found.other].find((row) => row !== undefined);
    const notes: string[] = [];
    if (any === undefined) notes.push('no such row on either side');
    const busy: string[] = [];
    for (const side of ['this', 'other'] as const) {
      const name = options.names[side];
      if (any !== undefined && reports[side].length > 0 && found[side].every((row) => !row))
        notes.push(`missing on ${name}: its bench has no row "${key}"`);
      found[side].forEach((row: Row | undefined, round) => {
        if (row?.error !== undefined)
          notes.push(`${name}${roundName(round)}: NOT MEASURED: ${row.error}`);
        if (row?.load !== undefined && (isBusy(row.load.before) || isBusy(row.load.after)))
          busy.push(`${name}${roundName(round)}`);
      });
    }
    if (busy.length > 0)
      notes.push(
        `the machine was busy (load1 above 0.7 x the CPUs) while it ran on ${busy.join('; ')}`,
      );
    const metricsOf = (side: Side) =>
      found[side].map((row) =>
        (row?.metrics ?? []).map((m) => ({ ...m, value: numberOf(m.figure.median) })),
      );
    const metrics = compareMetrics({ this: metricsOf('this'), other: metricsOf('other') });
    rows.push({ key, title: any?.title ?? key, metrics, notes });
  }
  const ratiosOf = (side: Side) =>
    rounds[side].map((report) =>
      (report?.ratios ?? []).map((r) => ({
        key: r.key,
        label: r.label,
        unit: '',
        value: numberOf(r.value),
      })),
    );
  const ratios = compareMetrics({ this: ratiosOf('this'), other: ratiosOf('other') }).filter(
    (m) => m.this !== undefined || m.other !== undefined,
  );
  if (ratios.length > 0)
    rows.push({
      key: ratiosRowKey,
      title: "Each side's ratios and checks",
      metrics: ratios,
      notes: [],
    });
  return rows;
}
