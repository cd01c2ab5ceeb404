import { describeLoad, type RowLoad } from './load.js';
import type { Figure } from './stats.js';

/** One measured quantity of a row. */
export interface Metric {
  key: string;
  label: string;
  unit: string;
  figure: Figure;
  /** Set to print every repetition's value too, under this name (`per pair`). */
  repsLabel?: string;
}

/** One row of the bench: its metrics and notes, or why it could not be measured. */
export interface Row {
  key: string;
  title: string;
  metrics: Metric[];
  notes: string[];
  /** Set when the row could not be measured; its metrics are then empty. */
  error?: string;
  /** The machine's load when the row started and ended. */
  load?: RowLoad;
}

/** A ratio between two medians of the same bench run (or a median of pair ratios), or a checked figure. */
export interface Ratio {
  key: string;
  label: string;
  value: number;
  /** What the target is, when there is one, and whether this run met it. */
  target?: { text: string; met: boolean };
}

/** Everything one bench run measured. */
export interface BenchReport {
  startedAt: string;
  quick: boolean;
  environment: Record<string, string | number>;
  rows: Row[];
  ratios: Ratio[];
}

/** Finds a metric's median, or NaN when the row or metric is missing. */
export function medianOf(report: Pick<BenchReport, 'rows'>, row: string, metric: string): number {
  return (
    report.rows.find((r) => r.key === row)?.metrics.find((m) => m.key === metric)?.figure.median ??
    Number.NaN
  );
}

/** A figure with as many digits as its size deserves; `-` when it is not a number. */
export function format(value: number): string {
  if (!Number.isFinite(value)) return '-';
  const abs = Math.abs(value);
  if (abs >= 10_000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toFixed(3);
}

/** The report as a plain-text table. */
export function renderTable(report: BenchReport): string {
  const lines: string[] = [];
  const env = Object.entries(report.environment)
    .map(([k, v]) => `${k}=${v}`)
    .join('  ');
  lines.push(
    `cairn bench${report.quick ? ' --quick (smoke check: figures are not meaningful)' : ''}`,
  );
  lines.push(env);
  lines.push('');
  const header = `${'metric'.padEnd(64)} ${'median'.padStart(12)} ${'min'.padStart(12)} ${'max'.padStart(12)}  unit`;
  for (const row of report.rows) {
    lines.push(`${row.title}`);
    if (row.load !== undefined) for (const line of describeLoad(row.load)) lines.push(`  ${line}`);
    if (row.error !== undefined) {
      lines.push(`  NOT MEASURED: ${row.error}`);
    } else {
      lines.push(`  ${header}`);
      for (const m of row.metrics) {
        lines.push(
          `  ${m.label.padEnd(64)} ${format(m.figure.median).padStart(12)} ${format(m.figure.min).padStart(12)} ${format(m.figure.max).padStart(12)}  ${m.unit}`,
        );
        if (m.repsLabel !== undefined)
          lines.push(`    ${m.repsLabel}: ${m.figure.reps.map(format).join(', ')}`);
      }
    }
    for (const note of row.notes) lines.push(`  note: ${note}`);
    lines.push('');
  }
  lines.push('Ratios and checks (medians of this run; against DBOS, medians of the pair ratios)');
  for (const ratio of report.ratios) {
    const target =
      ratio.target === undefined
        ? ''
        : `   target ${ratio.target.text}: ${!Number.isFinite(ratio.value) ? 'not measured' : ratio.target.met ? 'met' : 'MISSED'}`;
    lines.push(`  ${ratio.label.padEnd(72)} ${format(ratio.value).padStart(10)}${target}`);
  }
  return lines.join('\n');
}
