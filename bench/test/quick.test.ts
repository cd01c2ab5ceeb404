import { describe, expect, it } from 'vitest';
import { quickConfig } from '../src/config.js';
import { runBench, rowBuilders } from '../src/bench.js';
import { noRedisServerMessage } from '../src/redis-server.js';
import { renderTable } from '../src/report.js';

// A smoke check of `pnpm bench --quick`: every row is produced and printed. Figures are never asserted.
describe('pnpm bench --quick', () => {
  it('produces every row, each with figures (DBOS, and Redis without a server, may instead say why not)', async () => {
    const report = await runBench({ config: quickConfig, log: () => undefined });
    expect(report.rows.map((row) => row.key)).toEqual(rowBuilders.map((row) => row.key));
    for (const row of report.rows) {
      expect(row.load?.before.cpus, `${row.key}: load recorded`).toBeGreaterThan(0);
      if (row.key === 'dbos' && row.error !== undefined) {
        expect(row.error, 'DBOS says why it did not run').not.toBe('');
        continue;
      }
      // The Redis row needs a Redis: without one it says so, and only so.
      if (row.key === 'redis_claim_poll' && row.error === noRedisServerMessage) continue;
      expect(row.error, `${row.key}: ${row.error}`).toBeUndefined();
      expect(row.metrics.length, row.key).toBeGreaterThan(0);
      for (const metric of row.metrics)
        expect(metric.figure.reps.length, metric.key).toBeGreaterThan(0);
    }
    expect(report.ratios.map((ratio) => ratio.key)).toContain('throughput_vs_dbos');
    const table = renderTable(report);
    for (const row of report.rows) expect(table).toContain(row.title);
    expect(table).toContain('load1');
  }, 120_000);
});
