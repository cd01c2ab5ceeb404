import { format } from '../report.js';
import type { Figure } from '../stats.js';
import type { ComparedRow } from './combine.js';

/** One side of a comparison. */
export interface ComparedSide {
  /** `this` for the checkout the command runs in, else the ref as given (`main`). */
  name: string;
  commit: string;
  /** Only this side: the work tree had changes on top of its commit, and they were measured. */
  changes?: boolean;
  /** Rounds where its bench failed (wrote no report, or exited non-zero as it does when a row failed). */
  failures: string[];
  /** Its first report's environment (Node, Postgres, load). */
  environment?: Record<string, string | number>;
}

/** What `pnpm bench --compare <ref>` measured: both sides' figures over the rounds, and their ratios. */
export interface CompareReport {
  startedAt: string;
  quick: boolean;
  rounds: number;
  /** Both benches ran here, one at a time, each in a database of its own on this server. */
  postgres: string;
  this: ComparedSide;
  other: ComparedSide;
  rows: ComparedRow[];
}

function range(value: Figure | undefined): string {
  return value === undefined ? '' : `${format(value.min)}–${format(value.max)}`;
}

function ratio(value: number | undefined): string {
  return value === undefined ? '-' : `${format(value)}x`;
}

/** The comparison as a plain-text table: per row, each metric on both sides and their ratio. */
export function renderComparison(report: CompareReport): string {
  const mine = report.this;
  const other = report.other;
  const spread = report.rounds > 1;
  const lines = [
    `cairn bench --compare ${other.name}${report.quick ? ' --quick (smoke check: figures are not meaningful)' : ''}`,
    `this: the work tree at ${mine.commit.slice(0, 9)}${mine.changes === true ? ' with uncommitted changes' : ''}; ${other.name}: ${other.commit.slice(0, 9)}`,
    `${report.rounds} round${spread ? 's' : ''}, each running this side then ${other.name}, one at a time, on ${report.postgres}, each side in a database of its own`,
    `each figure is the median over the rounds of that side's own median${spread ? ' (min–max over the rounds)' : ''}; ratio = this ÷ ${other.name} in each round, its median${spread ? ' (min–max)' : ''}`,
    'the metrics do not say whether higher or lower is better: read a ratio by its unit',
  ];
  for (const side of [mine, other])
    for (const failure of side.failures) lines.push(`${side.name}: ${failure}`);
  lines.push('');
  // Each figure column: its median, then (over several rounds) its min–max.
  const cells = (label: string, columns: ReadonlyArray<[string, string]>, unit: string) =>
    `  ${label.padEnd(64)}${columns
      .map(
        ([value, spreadText]) =>
          ` ${value.padStart(10)}${spread ? ` ${spreadText.padStart(17)}` : ''}`,
      )
      .join('')}  ${unit}`;
  for (const row of report.rows) {
    lines.push(row.title);
    if (row.metrics.length > 0) {
      lines.push(
        cells(
          'metric',
          [
            ['this', '(min–max)'],
            [other.name.slice(0, 10), '(min–max)'],
            ['ratio', '(min–max)'],
          ],
          'unit',
        ),
      );
      for (const m of row.metrics)
        lines.push(
          cells(
            m.label,
            [
              [format(m.this?.median ?? Number.NaN), range(m.this)],
              [format(m.other?.median ?? Number.NaN), range(m.other)],
              [ratio(m.ratio?.median), m.ratio === undefined ? '' : `${range(m.ratio)}x`],
            ],
            m.unit,
          ),
        );
    }
    for (const note of row.notes) lines.push(`  note: ${note}`);
    lines.push('');
  }
  return lines.join('\n');
}
