import { createClient } from '@cairn/worker';
import { benchAgent } from '../agents.js';
import type { BenchContext } from '../context.js';
import { heldRunsEnv } from '../held-runs-env.js';
import { dropSchema, freshSchema, migrateSchema, openStore } from '../pg-setup.js';
import { ChildScript } from '../processes/child.js';
import type { Row } from '../report.js';
import { figure, sleep } from '../stats.js';

/**
 * Row 7: SIGKILL the worker process holding a run mid-tool; time until a surviving worker process (started
 * and idle before the kill) writes its first checkpoint of that run. Each repetition's survivor holds the
 * next repetition's run.
 */
export async function takeoverRow(ctx: BenchContext): Promise<Row> {
  const { takeoverReps, takeover } = ctx.config;
  const schema = freshSchema('bench_takeover');
  await migrateSchema(ctx, schema);
  const name = 'takeover';
  const env = (owner: string) => ({
    ...heldRunsEnv(ctx, schema, name, owner),
    LEASE_MS: String(takeover.leaseMs),
    POLL_MS: String(takeover.pollMs),
    PRINT_BOUNDARIES: '1',
  });
  const start = async (owner: string) => {
    const child = new ChildScript('worker-process.ts', env(owner));
    await child.waitFor((line) => line.kind === 'ready');
    return child;
  };
  const { store, close } = openStore(ctx, schema, 2);
  const client = createClient({ store });
  const agent = benchAgent({ name, trips: 2 });
  const toCheckpoint: number[] = [];
  const toClaim: number[] = [];
  let holder = await start('holder-0');
  try {
    ctx.log(`takeover: SIGKILL the holder mid-tool x${takeoverReps}`);
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
      toClaim.push((claimed.t as number) - killedAt);
      toCheckpoint.push((checkpoint.t as number) - killedAt);
      holder = survivor;
    }
  } finally {
    holder.kill('SIGKILL');
    await holder.exited;
    await close();
    await dropSchema(ctx, schema);
  }
  return {
    key: 'takeover',
    title:
      "7. Takeover: SIGKILL of the worker process holding a run, to the survivor's first checkpoint",
    metrics: [
      {
        key: 'to_checkpoint_ms',
        label: "SIGKILL to the survivor's first checkpoint of the run",
        unit: 'ms',
        figure: figure(toCheckpoint),
      },
      {
        key: 'to_claim_ms',
        label: "SIGKILL to the survivor's claim",
        unit: 'ms',
        figure: figure(toClaim),
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
      `${takeoverReps} kills; figures over kills, not repetitions of a batch. Worker processes with default lease and poll; the survivor is idle, started before the kill`,
      "the holder's lock session dies with it, so the survivor claims without waiting for the lease: the time is bounded by the poll interval",
    ],
  };
}
