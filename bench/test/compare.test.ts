import { describe, expect, it } from 'vitest';
import { compareReports, ratiosRowKey } from '../src/compare/combine.js';
import type { BenchReport, Row } from '../src/report.js';
import { figure } from '../src/stats.js';

function row(key: string, metrics: Record<string, number>, error?: string): Row {
  return {
    key,
    title: `title of ${key}`,
    metrics: Object.entries(metrics).map(([metric, value]) => ({
      key: metric,
      label: `label of ${metric}`,
      unit: 'ms',
      figure: figure([value]),
    })),
    notes: [],
    ...(error === undefined ? {} : { error }),
  };
}

function report(rows: Row[], ratios: BenchReport['ratios'] = []): BenchReport {
  return { startedAt: '', quick: true, environment: {}, rows, ratios };
}

const names = { this: 'this', other: 'main' };

describe('compareReports', () => {
  it('pairs each round of both sides: medians over the rounds, and this ÷ other per round', () => {
    const rows = compareReports(
      {
        this: [report([row('per_step', { ms: 2 })]), report([row('per_step', { ms: 6 })])],
        other: [report([row('per_step', { ms: 1 })]), report([row('per_step', { ms: 4 })])],
      },
      { names },
    );
    const [metric] = rows[0]!.metrics;
    expect(metric!.this).toMatchObject({ median: 4, min: 2, max: 6, reps: [2, 6] });
    expect(metric!.other).toMatchObject({ median: 2.5, reps: [1, 4] });
    expect(metric!.ratio).toMatchObject({ median: 1.75, min: 1.5, max: 2, reps: [2, 1.5] });
  });

  it('says a row or a metric one side lacks is missing there, and gives the other side its figures', () => {
    const rows = compareReports(
      {
        this: [report([row('per_step', { ms: 2, added: 5 }), row('redis_claim_poll', { ms: 9 })])],
        other: [report([row('per_step', { ms: 1 })])],
      },
      { names, only: ['per_step', 'redis_claim_poll', 'nosuch'] },
    );
    expect(rows.map((r) => r.key)).toEqual(['per_step', 'redis_claim_poll', 'nosuch']);
    const added = rows[0]!.metrics.find((m) => m.key === 'added')!;
    expect(added.this?.median).toBe(5);
    expect(added.other).toBeUndefined();
    expect(added.ratio).toBeUndefined();
    expect(rows[1]!.notes).toEqual(['missing on main: its bench has no row "redis_claim_poll"']);
    expect(rows[1]!.metrics[0]!.this?.median).toBe(9);
    expect(rows[2]!.notes).toEqual(['no such row on either side']);
  });

  it('reports a row not measured on one side, and a round where a side wrote no report', () => {
    const rows = compareReports(
      {
        this: [report([row('limit', { ms: 2 })]), report([row('limit', { ms: 3 })])],
        other: [report([row('limit', {}, 'connection refused')]), undefined],
      },
      { names },
    );
    expect(rows[0]!.notes).toEqual(['main, round 1: NOT MEASURED: connection refused']);
    expect(rows[0]!.metrics[0]!.this?.reps).toEqual([2, 3]);
    expect(rows[0]!.metrics[0]!.other).toBeUndefined();
  });

  it("compares each side's own ratios, leaving out those neither side could compute (null in JSON)", () => {
    const ratio = (key: string, value: number | null) =>
      ({ key, label: key, value }) as BenchReport['ratios'][number];
    const rows = compareReports(
      {
        this: [report([], [ratio('trip_vs_update', 2.6), ratio('throughput_vs_dbos', null)])],
        other: [report([], [ratio('trip_vs_update', 2), ratio('throughput_vs_dbos', null)])],
      },
      { names },
    );
    const ratios = rows.find((r) => r.key === ratiosRowKey)!;
    expect(ratios.metrics.map((m) => m.key)).toEqual(['trip_vs_update']);
    expect(ratios.metrics[0]!.ratio?.median).toBeCloseTo(1.3);
  });
});
