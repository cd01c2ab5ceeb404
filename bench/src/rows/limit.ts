import postgres from 'postgres';
import type { BenchContext } from '../context.js';
import type { Metric, Row } from '../report.js';
import { figure, now, quantile, repeat } from '../stats.js';

interface LimitRep {
  median: number;
  p99: number;
  commitsPerSecond: number;
}

/**
 * Row 1, the physical limit: one fenced 1 KB JSONB `UPDATE ... WHERE id = $1 AND epoch = $2` per transaction
 * through the `postgres` client, each connection updating a row of its own, at 1 and at 32 connections.
 */
export async function limitRow(ctx: BenchContext): Promise<Row> {
  const { limit, reps } = ctx.config;
  const table = 'bench_limit';
  await ctx.admin.unsafe(`DROP TABLE IF EXISTS ${table}`);
  await ctx.admin.unsafe(
    `CREATE TABLE ${table} (id int PRIMARY KEY, epoch bigint NOT NULL, payload jsonb NOT NULL)`,
  );
  await ctx.admin.unsafe(
    `INSERT INTO ${table} SELECT g, 1, '{}'::jsonb FROM generate_series(0, $1::int - 1) g`,
    [limit.connections],
  );
  // 1 KB of JSON text, varied per statement so no write is a no-op.
  const filler = 'x'.repeat(limit.payloadBytes - 40);
  const payload = (n: number) => JSON.stringify({ n, filler });

  async function measure(connections: number, updates: number): Promise<LimitRep> {
    const sql = postgres(ctx.url, { max: connections, onnotice: () => undefined });
    try {
      // Open every connection and prepare the statement before timing.
      await Promise.all(
        Array.from({ length: connections }, (_, id) =>
          sql.unsafe(`UPDATE ${table} SET payload = $3::text::jsonb WHERE id = $1 AND epoch = $2`, [
            id,
            1,
            payload(0),
          ]),
        ),
      );
      const latencies: number[] = [];
      const perConnection = Math.ceil(updates / connections);
      const started = now();
      await Promise.all(
        Array.from({ length: connections }, async (_, id) => {
          for (let i = 0; i < perConnection; i += 1) {
            const t0 = now();
            const result = await sql.unsafe(
              `UPDATE ${table} SET payload = $3::text::jsonb WHERE id = $1 AND epoch = $2`,
              [id, 1, payload(i)],
            );
            latencies.push(now() - t0);
            if (result.count !== 1) throw new Error('the fenced update matched no row');
          }
        }),
      );
      const elapsed = now() - started;
      return {
        median: quantile(latencies, 0.5),
        p99: quantile(latencies, 0.99),
        commitsPerSecond: (latencies.length / elapsed) * 1000,
      };
    } finally {
      await sql.end({ timeout: 5 });
    }
  }

  const metrics: Metric[] = [];
  for (const [connections, updates] of [
    [1, limit.singleUpdates],
    [limit.connections, limit.concurrentUpdates],
  ] as const) {
    ctx.log(`limit: ${updates} fenced updates on ${connections} connection(s) x${reps}`);
    const results = await repeat(reps, () => measure(connections, updates));
    const tag = connections === 1 ? 'single' : 'concurrent';
    const at = `${connections} connection${connections === 1 ? '' : 's'}`;
    metrics.push(
      {
        key: `${tag}.median_ms`,
        label: `fenced 1 KB update, ${at}: median latency`,
        unit: 'ms',
        figure: figure(results.map((r) => r.median)),
      },
      {
        key: `${tag}.p99_ms`,
        label: `fenced 1 KB update, ${at}: p99 latency`,
        unit: 'ms',
        figure: figure(results.map((r) => r.p99)),
      },
      {
        key: `${tag}.commits_per_s`,
        label: `fenced 1 KB update, ${at}: commits/s`,
        unit: '/s',
        figure: figure(results.map((r) => r.commitsPerSecond)),
      },
    );
  }
  await ctx.admin.unsafe(`DROP TABLE ${table}`);
  return {
    key: 'limit',
    title: '1. The limit: one fenced 1 KB JSONB UPDATE per transaction (postgres client)',
    metrics,
    notes: [
      `${limit.singleUpdates} updates at 1 connection, ${limit.concurrentUpdates} at ${limit.connections}, each connection its own row`,
    ],
  };
}
