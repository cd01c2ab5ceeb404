import { randomUUID } from 'node:crypto';
import { redisStore } from '@cairn/store-redis';
import { Redis } from 'ioredis';
import type { BenchContext } from '../context.js';
import { benchRedis, commandCalls, deletePrefix } from '../redis-server.js';
import type { Row } from '../report.js';
import { figure, now, repeat } from '../stats.js';

interface PollRep {
  commandsPerPoll: number;
  msPerPoll: number;
  /** Calls per poll of each command, for the notes. */
  byCommand: Map<string, number>;
}

const definitions = [{ kind: 'agent', name: 'held' }];
/** What a worker of concurrency 10 with nothing in hand asks for at each poll. */
const pollLimit = 10;

/**
 * Row 12: the cost of one claim poll on Redis (`claimable`, what a worker without `claim` asks at every poll)
 * while `runs` runs are in flight, each held by a live lease of another worker: none can be claimed, so the
 * poll finds nothing, and what it costs is what every idle worker pays at every poll. Commands from `INFO
 * commandstats` deltas, time on the bench's clock; on one Redis node.
 */
export async function redisClaimPollRow(ctx: BenchContext): Promise<Row> {
  const { reps, claimPoll } = ctx.config;
  const redis = await benchRedis();
  const client = new Redis(redis.url);
  client.on('error', () => undefined);
  const prefix = `cairn-bench-claim-poll-${randomUUID()}`;
  const store = redisStore({ client, prefix });
  // The runs' holder renews no liveness, so the commands counted are the polls' alone (a live holder's
  // renewals, a script per bucket 5 times a second, would land among them); a poll reads the same either way.
  const holder = redisStore({ client, prefix, liveness: 'lease' });
  try {
    ctx.log(
      `redis_claim_poll: ${claimPoll.runs} runs held by live leases, ${claimPoll.polls} polls x${reps}`,
    );
    const batch = 500;
    for (let first = 0; first < claimPoll.runs; first += batch) {
      await Promise.all(
        Array.from({ length: Math.min(batch, claimPoll.runs - first) }, async (_, i) => {
          const runId = `held-${first + i}`;
          await holder.create({
            runId,
            kind: 'agent',
            name: 'held',
            signature: 's',
            status: 'queued',
            snapshot: null,
          });
          const lease = await holder.acquire(runId, { owner: 'holder', ttlMs: 600_000 });
          if (lease === undefined) throw new Error(`${runId} could not be held`);
          await holder.updateStatus(lease, { status: 'running' });
        }),
      );
    }
    const results = await repeat(reps, async (): Promise<PollRep> => {
      const before = await commandCalls(client);
      const started = now();
      for (let poll = 0; poll < claimPoll.polls; poll += 1) {
        const found = await store.claimable({ limit: pollLimit, definitions });
        if (found.length !== 0) throw new Error(`a poll found ${found.length} claimable runs`);
      }
      const msPerPoll = (now() - started) / claimPoll.polls;
      const after = await commandCalls(client);
      const byCommand = new Map<string, number>();
      for (const [command, calls] of after) {
        const delta = calls - (before.get(command) ?? 0);
        if (delta > 0) byCommand.set(command, delta / claimPoll.polls);
      }
      const commandsPerPoll = [...byCommand.values()].reduce((sum, calls) => sum + calls, 0);
      return { commandsPerPoll, msPerPoll, byCommand };
    });
    const breakdown = [...(results[0]?.byCommand ?? [])]
      .sort(([, a], [, b]) => b - a)
      .map(([command, calls]) => `${command} ${calls.toFixed(1)}`)
      .join(', ');
    return {
      key: 'redis_claim_poll',
      title: `12. Redis claim poll: one idle worker's poll (claimable, limit ${pollLimit}) with ${claimPoll.runs.toLocaleString('en-US')} runs in flight`,
      metrics: [
        {
          key: 'commands_per_poll',
          label: 'Redis commands per poll',
          unit: 'cmd',
          figure: figure(results.map((r) => r.commandsPerPoll)),
        },
        {
          key: 'commands_per_poll_per_run',
          label: 'Redis commands per poll / runs in flight',
          unit: 'cmd',
          figure: figure(results.map((r) => r.commandsPerPoll / claimPoll.runs)),
        },
        {
          key: 'ms_per_poll',
          label: 'time per poll',
          unit: 'ms',
          figure: figure(results.map((r) => r.msPerPoll)),
        },
      ],
      notes: [
        `commands per poll by name (first repetition): ${breakdown}`,
        `Redis: ${redis.source}, one node; the runs are created queued, claimed with a 10-minute lease and moved to running first`,
      ],
    };
  } finally {
    await deletePrefix(client, prefix).catch(() => undefined);
    await store.close();
    client.disconnect();
    await redis.stop();
  }
}
