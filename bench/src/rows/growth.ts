import postgres from 'postgres';
import { benchAgent } from '../agents.js';
import type { BenchContext } from '../context.js';
import { pgStore } from '@cairn/store-pg';
import { countingSql } from '../counting-sql.js';
import { countingStore } from '../counting-store.js';
import { dropSchema, freshSchema, migrateSchema } from '../pg-setup.js';
import type { Row } from '../report.js';
import type { JsonValue } from '@cairn/sdk';
import { figure, repeat } from '../stats.js';

interface GrowthRep {
  /** Bytes of the parameters of the statements store-pg sent. */
  sentBytes: number;
  statements: number;
  /** JSON of the checkpoints and journal entries the runtime handed the store. */
  handedBytes: number;
  walBytes: number;
  finalSnapshot: number;
  /** What rewriting the whole snapshot at every checkpoint writes: the sum of every checkpoint's snapshot. */
  rewriteAll: number;
  /** JSON of the run's history in its final snapshot, per trip it still records. */
  historyPerTrip: number;
}

/** The history's JSON bytes per trip it holds (it is bounded: a long run's oldest trips are dropped). */
function historyBytesPerTrip(snapshot: JsonValue | null | undefined): number {
  const history = (snapshot as { history?: { records?: unknown[] } } | null)?.history;
  // A unit record: `{ t: 'unit' }` in the objects of history v1, `['u', ...]` in the compact form (v2).
  const isUnit = (record: unknown) =>
    Array.isArray(record) ? record[0] === 'u' : (record as { t?: string } | null)?.t === 'unit';
  const trips = history?.records?.filter(isUnit).length ?? 0;
  return trips === 0 ? Number.NaN : JSON.stringify(history).length / trips;
}

async function walLsn(sql: postgres.Sql): Promise<string> {
  const [row] = await sql.unsafe<Array<{ lsn: string }>>(
    'SELECT pg_current_wal_lsn()::text AS lsn',
  );
  return row!.lsn;
}

/**
 * Row 9: one run of `trips` trips whose conversation grows by a tool result every trip. Bytes written per trip
 * (the JSON handed to the store's writes, and the WAL), against the final snapshot's size.
 */
export async function growthRow(ctx: BenchContext): Promise<Row> {
  const { reps, growth } = ctx.config;
  const schema = freshSchema('bench_growth');
  await migrateSchema(ctx, schema);
  try {
    ctx.log(`growth: one run of ${growth.trips} trips x${reps}`);
    const results = await repeat(reps, async (): Promise<GrowthRep> => {
      const raw = postgres(ctx.url, { max: 4, onnotice: () => undefined });
      const sent = countingSql(raw);
      const pg = pgStore({ sql: sent.sql, schema });
      const close = async () => {
        await pg.close();
        await raw.end({ timeout: 5 });
      };
      const counted = countingStore(pg);
      const snapshots: number[] = [];
      const agent = benchAgent({
        name: 'growth',
        trips: growth.trips,
        resultBytes: growth.toolResultBytes,
        store: counted.store,
      });
      try {
        const before = await walLsn(ctx.admin);
        const { runId } = await agent.execute('go', {
          onBoundary: (boundary) => {
            if (boundary.point === 'checkpoint.after')
              snapshots.push(counted.counts.lastSnapshotBytes.get(boundary.runId) ?? 0);
          },
        });
        const after = await walLsn(ctx.admin);
        const stored = await pg.load(runId);
        const [row] = await ctx.admin.unsafe<Array<{ bytes: string }>>(
          'SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::text AS bytes',
          [after, before],
        );
        return {
          sentBytes: sent.counts.paramBytes,
          statements: sent.counts.statements,
          handedBytes: counted.counts.saveBytes + counted.counts.appendBytes,
          walBytes: Number(row!.bytes),
          finalSnapshot: counted.counts.lastSnapshotBytes.get(runId) ?? Number.NaN,
          rewriteAll: snapshots.reduce((sum, size) => sum + size, 0),
          historyPerTrip: historyBytesPerTrip(stored?.run.snapshot),
        };
      } finally {
        await close();
      }
    });
    const n = growth.trips;
    return {
      key: 'growth',
      title: `9. Growth: one run of ${n} trips, the conversation growing by a ${growth.toolResultBytes}-character tool result per trip`,
      metrics: [
        {
          key: 'sent_bytes_per_trip',
          label: 'bytes sent per trip (parameters of store-pg statements)',
          unit: 'B',
          figure: figure(results.map((r) => r.sentBytes / n)),
        },
        {
          key: 'wal_bytes_per_trip',
          label: 'WAL bytes per trip',
          unit: 'B',
          figure: figure(results.map((r) => r.walBytes / n)),
        },
        {
          key: 'history_bytes_per_trip',
          label: "history bytes per trip (in the run's checkpoint; no write of its own)",
          unit: 'B',
          figure: figure(results.map((r) => r.historyPerTrip)),
        },
        {
          key: 'final_snapshot_bytes',
          label: 'final snapshot size',
          unit: 'B',
          figure: figure(results.map((r) => r.finalSnapshot)),
        },
        {
          key: 'sent_over_final',
          label: 'total sent / final snapshot',
          unit: 'x',
          figure: figure(results.map((r) => r.sentBytes / r.finalSnapshot)),
        },
        {
          key: 'handed_over_final',
          label: 'runtime -> store: checkpoint + journal JSON / final',
          unit: 'x',
          figure: figure(results.map((r) => r.handedBytes / r.finalSnapshot)),
        },
        {
          key: 'wal_over_final',
          label: 'total WAL / final snapshot',
          unit: 'x',
          figure: figure(results.map((r) => r.walBytes / r.finalSnapshot)),
        },
        {
          key: 'rewrite_all_over_final',
          label: 'O(n^2) reference: whole conversation rewritten per trip / final',
          unit: 'x',
          figure: figure(results.map((r) => r.rewriteAll / r.finalSnapshot)),
        },
        {
          key: 'append_only_over_final',
          label: 'O(n) reference: each message written once / final',
          unit: 'x',
          figure: figure(results.map(() => 1)),
        },
      ],
      notes: [
        `statements per trip: ${((results[0]?.statements ?? Number.NaN) / n).toFixed(2)}; the runtime hands the store the whole snapshot at every checkpoint, store-pg sends only the new elements of its growing arrays`,
        'the O(n^2) reference is the sum of the snapshot sizes at every checkpoint; about n/2 for a linearly growing conversation',
        'WAL is server-wide (other sessions on the server add to it) and TOAST-compressed',
      ],
    };
  } finally {
    await dropSchema(ctx, schema);
  }
}
