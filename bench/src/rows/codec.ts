import { randomBytes } from 'node:crypto';
import {
  aesGcmCodec,
  deflateCodec,
  memoryStore,
  protectPayloads,
  type DurableStore,
} from '@cairn/sdk';
import { pgStore } from '@cairn/store-pg';
import postgres from 'postgres';
import type { BenchContext } from '../context.js';
import { countingSql } from '../counting-sql.js';
import { payloadAgent } from '../payload-agent.js';
import { costBetween, readCounters, waitForBackendsToExit } from '../pg-counters.js';
import { dropSchema, freshSchema, migrateSchema } from '../pg-setup.js';
import type { Metric, Row } from '../report.js';
import { figure } from '../stats.js';
import { timeSequentialRuns, type TripTimes } from './per-step.js';

/** The bar of each on/off ratio: time per trip and bytes per trip (issue #34). */
export const codecBar = 1.1;

type Wrap = (store: DurableStore) => DurableStore;

/** One half of a pair on store-pg: its trip times and what it wrote, per trip. */
interface PgHalf extends TripTimes {
  walBytes: number;
  /** Growth of the schema's live rows (`pg_column_size`, as stored: TOAST-compressed). */
  storedBytes: number;
  /** Parameters of the statements store-pg sent. */
  sentBytes: number;
}

/** The bytes of every live row of `schema`'s tables, as stored (compressed values at their compressed size). */
async function storedBytes(ctx: BenchContext, schema: string): Promise<number> {
  const tables = await ctx.admin.unsafe<Array<{ name: string }>>(
    'SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 ORDER BY tablename',
    [schema],
  );
  const sums = tables.map(
    ({ name }) => `(SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM "${schema}"."${name}" t)`,
  );
  const [row] = await ctx.admin.unsafe<Array<{ bytes: string }>>(
    `SELECT (${sums.join(' + ')})::text AS bytes`,
  );
  return Number(row!.bytes);
}

/**
 * `runs` sequential runs of the payload agent on store-pg in `schema`, its store wrapped by `wrap` (after two
 * warm-up runs), with the WAL, the stored rows and the parameters they added, per trip.
 */
async function pgHalf(
  ctx: BenchContext,
  schema: string,
  wrap: Wrap,
  name: string,
): Promise<PgHalf> {
  const { runs, trips } = ctx.config.codec;
  const open = () => {
    const raw = postgres(ctx.url, { max: 10, onnotice: () => undefined });
    const sent = countingSql(raw);
    const pg = pgStore({ sql: sent.sql, schema });
    return {
      store: wrap(pg),
      sent: sent.counts,
      async close() {
        await pg.close();
        await raw.end({ timeout: 5 });
      },
    };
  };
  const warm = open();
  await timeSequentialRuns(payloadAgent({ name, trips, store: warm.store }), 2, trips);
  await warm.close();
  await waitForBackendsToExit(ctx.admin, ctx.database);
  const storedBefore = await storedBytes(ctx, schema);
  const before = await readCounters(ctx.admin, ctx.database);
  const measured = open();
  const times = await timeSequentialRuns(
    payloadAgent({ name, trips, store: measured.store }),
    runs,
    trips,
  );
  await measured.close();
  await waitForBackendsToExit(ctx.admin, ctx.database);
  const cost = await costBetween(ctx.admin, before, await readCounters(ctx.admin, ctx.database));
  const stored = (await storedBytes(ctx, schema)) - storedBefore;
  const n = runs * trips;
  return {
    ...times,
    walBytes: cost.walBytes / n,
    storedBytes: stored / n,
    sentBytes: measured.sent.paramBytes / n,
  };
}

/** `runs` sequential runs of the payload agent on a fresh memory store wrapped by `wrap`, after two warm-ups. */
async function memoryHalf(ctx: BenchContext, wrap: Wrap, name: string): Promise<TripTimes> {
  const { runs, trips } = ctx.config.codec;
  await timeSequentialRuns(payloadAgent({ name, trips, store: wrap(memoryStore()) }), 2, trips);
  return timeSequentialRuns(payloadAgent({ name, trips, store: wrap(memoryStore()) }), runs, trips);
}

/** Each half's results over the pairs, in pair order. */
interface Halves<T> {
  off: T[];
  on: T[];
}

const storeNames = { pg: 'store-pg', memory: 'memory store' } as const;
type StoreKey = keyof typeof storeNames;

/** One figure per pair, with each pair's value printed. */
const perPair = (key: string, label: string, unit: string, values: number[]): Metric => ({
  key,
  label,
  unit,
  figure: figure(values),
  repsLabel: 'per pair',
});

/** A measure of each half: `<store>.off.<key>` and `<store>.on.<key>`. */
function bothHalves<T>(
  halves: Halves<T>,
  store: StoreKey,
  key: string,
  label: string,
  unit: string,
  of: (half: T) => number,
): Metric[] {
  return (['off', 'on'] as const).map((side) =>
    perPair(
      `${store}.${side}.${key}`,
      `${storeNames[store]}, codec ${side}: ${label}`,
      unit,
      halves[side].map(of),
    ),
  );
}

/** A measure's on / off ratio in each pair, labelled with the bar when it has one. */
function onOverOff<T>(
  halves: Halves<T>,
  store: StoreKey,
  key: string,
  label: string,
  of: (half: T) => number,
  bar: boolean,
): Metric {
  return perPair(
    `${store}.${key}`,
    `${storeNames[store]}: ${label}, on / off${bar ? ` (bar: <= ${codecBar.toFixed(2)})` : ''}`,
    'x',
    halves.on.map((half, i) => of(half) / of(halves.off[i]!)),
  );
}

/**
 * Row 14: what the payload codec (deflate then AES-256-GCM, through `protectPayloads`) costs a sequential agent
 * trip whose model text, tool arguments and tool result are about 1 KB of JSON each. Halves without and with
 * the codec alternate (off, on, off, on...) so machine noise lands on both; each ratio is on ÷ off within a
 * pair, and its figure the median over the pairs. The same on the memory store shows the codec's own cost.
 */
export async function codecRow(ctx: BenchContext): Promise<Row> {
  const { pairs, runs, trips } = ctx.config.codec;
  const keys = { k1: randomBytes(32) };
  const wraps: Record<'off' | 'on', Wrap> = {
    off: (store) => store,
    on: (store) =>
      protectPayloads(store, { codec: [deflateCodec(), aesGcmCodec({ keys, current: 'k1' })] }),
  };
  const schemas = { off: freshSchema('bench_codec_off'), on: freshSchema('bench_codec_on') };
  await migrateSchema(ctx, schemas.off);
  await migrateSchema(ctx, schemas.on);
  try {
    ctx.log(
      `codec: ${pairs} pair${pairs === 1 ? '' : 's'} of ${runs} sequential runs of ${trips} trips on store-pg, codec off then on`,
    );
    const pg: Halves<PgHalf> = { off: [], on: [] };
    for (let pair = 0; pair < pairs; pair += 1)
      for (const side of ['off', 'on'] as const)
        pg[side].push(await pgHalf(ctx, schemas[side], wraps[side], `codec-${side}`));
    ctx.log(`codec: the same on the memory store`);
    const memory: Halves<TripTimes> = { off: [], on: [] };
    for (let pair = 0; pair < pairs; pair += 1)
      for (const side of ['off', 'on'] as const)
        memory[side].push(await memoryHalf(ctx, wraps[side], `codec-${side}`));
    const metrics: Metric[] = [
      ...bothHalves(pg, 'pg', 'median_ms', 'ms per trip, median', 'ms', (h) => h.median),
      ...bothHalves(pg, 'pg', 'p99_ms', 'ms per trip, p99', 'ms', (h) => h.p99),
      onOverOff(pg, 'pg', 'time_ratio', 'ms per trip (median)', (h) => h.median, true),
      onOverOff(pg, 'pg', 'p99_ratio', 'ms per trip (p99)', (h) => h.p99, false),
      ...bothHalves(pg, 'pg', 'wal_bytes_per_trip', 'WAL bytes per trip', 'B', (h) => h.walBytes),
      onOverOff(pg, 'pg', 'wal_ratio', 'WAL bytes per trip', (h) => h.walBytes, true),
      ...bothHalves(
        pg,
        'pg',
        'stored_bytes_per_trip',
        'stored row bytes per trip',
        'B',
        (h) => h.storedBytes,
      ),
      onOverOff(pg, 'pg', 'stored_ratio', 'stored row bytes per trip', (h) => h.storedBytes, true),
      ...bothHalves(
        pg,
        'pg',
        'sent_bytes_per_trip',
        'statement parameter bytes per trip',
        'B',
        (h) => h.sentBytes,
      ),
      ...bothHalves(memory, 'memory', 'median_ms', 'ms per trip, median', 'ms', (h) => h.median),
      ...bothHalves(memory, 'memory', 'p99_ms', 'ms per trip, p99', 'ms', (h) => h.p99),
      onOverOff(memory, 'memory', 'time_ratio', 'ms per trip (median)', (h) => h.median, false),
      perPair(
        'memory.codec_ms_per_trip',
        "memory store: the codec's ms per trip (median on - median off)",
        'ms',
        memory.on.map((half, i) => half.median - memory.off[i]!.median),
      ),
    ];
    return {
      key: 'codec',
      title: `14. Payload codec: sequential runs of ${trips} trips with 1 KB payloads, deflate + AES-256-GCM off and on`,
      metrics,
      notes: [
        `${runs} runs per half (after two warm-up runs), halves alternating off, on, off, on... over ${pairs} pair${pairs === 1 ? '' : 's'}; a ratio is on / off within a pair, its figure the median over the pairs`,
        'each trip: about 1 KB of model text, a tool call whose arguments are a 1 KB order and a non-idempotent tool answering a 1 KB customer record (JSON)',
        "stored row bytes: growth of the summed pg_column_size of the live rows of the half's own schema (values as stored, TOAST-compressed); WAL is server-wide",
      ],
    };
  } finally {
    await dropSchema(ctx, schemas.off);
    await dropSchema(ctx, schemas.on);
  }
}
