import { randomUUID } from 'node:crypto';
import type { DurableStore } from '@cairn/sdk';
import { redisStore } from '@cairn/store-redis';
import { createClient } from '@cairn/worker';
import { Redis } from 'ioredis';
import { benchAgent } from '../agents.js';
import type { BenchContext } from '../context.js';
import { heldRunsEnv, type StoreTarget } from '../held-runs-env.js';
import { dropSchema, freshSchema, migrateSchema, openStore } from '../pg-setup.js';
import { ChildScript } from '../processes/child.js';
import { benchRedis, deletePrefix } from '../redis-server.js';
import type { Metric, Row } from '../report.js';
import { figure, sleep } from '../stats.js';

/** Both stores' default `takeoverGraceMs`: how long a holder's liveness must be gone before its runs are taken. */
const takeoverGraceMs = 3_000;

/** Milliseconds from each SIGKILL to the survivor's claim and to its first checkpoint of the run. */
interface Takeovers {
  toClaim: number[];
  toCheckpoint: number[];
}

/**
 * SIGKILLs the worker process holding a run mid-tool, `takeoverReps` times, on `target`; times until a surviving
 * worker process (started and idle before the kill) claims the run and writes its first checkpoint of it. Each
 * repetition's survivor holds the next repetition's run. `store` starts the runs.
 */
async function measure(
  ctx: BenchContext,
  target: StoreTarget,
  store: DurableStore,
): Promise<Takeovers> {
  const { takeoverReps, takeover } = ctx.config;
  const name = 'takeover';
  const start = async (owner: string) => {
    const child = new ChildScript('worker-process.ts', {
      ...heldRunsEnv(ctx, target, name, owner),
      LEASE_MS: String(takeover.leaseMs),
      POLL_MS: String(takeover.pollMs),
      PRINT_BOUNDARIES: '1',
    });
    await child.waitFor((line) => line.kind === 'ready');
    return child;
  };
  const client = createClient({ store });
  const agent = benchAgent({ name, trips: 2 });
  const measured: Takeovers = { toClaim: [], toCheckpoint: [] };
  let holder = await start('holder-0');
  try {
    ctx.log(`takeover on ${target.store}: SIGKILL the holder mid-tool x${takeoverReps}`);
    for (let rep = 0; rep < takeoverReps; rep += 1) {
      const { runId } = await client.start(agent, 'go');
      await holder.waitFor(
        (l) =>
          l.kind === 'boundary' &&
          l.point === 'effect.before' &&
          l.runId === runId &&
          l.effectId === 'trip-0/tool/c0',
      );
      const survivor = await start(`survivor-${rep}`);
      // Let the survivor settle into its idle poll loop, at a random phase of it.
      await sleep(200 + Math.random() * takeover.pollMs);
      const killedAt = Date.now();
      holder.kill('SIGKILL');
      await holder.exited;
      const claimed = await survivor.waitFor(
        (l) => l.kind === 'event' && l.type === 'claimed' && l.runId === runId,
      );
      const checkpoint = await survivor.waitFor(
        (l) => l.kind === 'boundary' && l.point === 'checkpoint.after' && l.runId === runId,
      );
      measured.toClaim.push((claimed.t as number) - killedAt);
      measured.toCheckpoint.push((checkpoint.t as number) - killedAt);
      holder = survivor;
    }
  } finally {
    holder.kill('SIGKILL');
    await holder.exited;
  }
  return measured;
}

async function onPostgres(ctx: BenchContext): Promise<Takeovers> {
  const schema = freshSchema('bench_takeover');
  await migrateSchema(ctx, schema);
  const { store, close } = openStore(ctx, schema, 2);
  try {
    return await measure(ctx, { store: 'pg', schema }, store);
  } finally {
    await close();
    await dropSchema(ctx, schema);
  }
}

async function onRedis(ctx: BenchContext): Promise<{ takeovers: Takeovers; source: string }> {
  const redis = await benchRedis();
  const client = new Redis(redis.url);
  client.on('error', () => undefined);
  const prefix = `cairn-bench-takeover-${randomUUID()}`;
  const store = redisStore({ client, prefix });
  try {
    const takeovers = await measure(ctx, { store: 'redis', url: redis.url, prefix }, store);
    return { takeovers, source: redis.source };
  } finally {
    await deletePrefix(client, prefix).catch(() => undefined);
    await store.close();
    client.disconnect();
    await redis.stop();
  }
}

const timings = (store: string, keyPrefix: string, takeovers: Takeovers): Metric[] => [
  {
    key: `${keyPrefix}to_checkpoint_ms`,
    label: `${store}: SIGKILL to the survivor's first checkpoint of the run`,
    unit: 'ms',
    figure: figure(takeovers.toCheckpoint),
  },
  {
    key: `${keyPrefix}to_claim_ms`,
    label: `${store}: SIGKILL to the survivor's claim`,
    unit: 'ms',
    figure: figure(takeovers.toClaim),
  },
];

/**
 * Row 7: SIGKILL the worker process holding a run mid-tool; time until a surviving worker process writes its
 * first checkpoint of that run, on Postgres, then on Redis (`REDIS_URL`'s, or a `redis-server` child).
 */
export async function takeoverRow(ctx: BenchContext): Promise<Row> {
  const { takeoverReps, takeover } = ctx.config;
  const postgres = await onPostgres(ctx);
  const redis = await onRedis(ctx).catch((error: unknown) =>
    error instanceof Error ? error.message : String(error),
  );
  return {
    key: 'takeover',
    title:
      "7. Takeover: SIGKILL of the worker process holding a run, to the survivor's first checkpoint (Postgres, Redis)",
    metrics: [
      ...timings('Postgres', '', postgres),
      ...(typeof redis === 'string' ? [] : timings('Redis', 'redis.', redis.takeovers)),
      {
        key: 'grace_ms',
        label: 'takeover grace, both stores (for comparison)',
        unit: 'ms',
        figure: figure([takeoverGraceMs]),
      },
      {
        key: 'lease_ms',
        label: 'lease length (for comparison)',
        unit: 'ms',
        figure: figure([takeover.leaseMs]),
      },
      {
        key: 'poll_ms',
        label: 'worker poll interval (a killed holder sends no notification)',
        unit: 'ms',
        figure: figure([takeover.pollMs]),
      },
    ],
    notes: [
      `${takeoverReps} kills per store; figures over kills, not repetitions of a batch. Worker processes with default lease and poll; the survivor is idle, started before the kill`,
      "Postgres: the holder's lock session dies with it; the survivor's claims find it gone within a second and take its runs once the grace passed",
      'Redis: the holder renews its liveness every 200 ms, good for 500 ms; the survivor finds it gone at its next poll and is woken when the grace ends, counted from the end of that liveness',
      typeof redis === 'string' ? `Redis: NOT MEASURED: ${redis}` : `Redis: ${redis.source}`,
    ],
  };
}
