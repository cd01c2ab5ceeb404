import { randomBytes } from 'node:crypto';
import {
  aesGcmCodec,
  defineAgent,
  defineTool,
  deflateCodec,
  pendingApprovals,
  protectPayloads,
  RunWaitingError,
  type DurableStore,
} from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { z } from 'zod';
import type { BenchContext } from '../context.js';
import { payloadAgent } from '../payload-agent.js';
import { dropSchema, freshSchema, migrateSchema, openStore } from '../pg-setup.js';
import type { Metric, Row } from '../report.js';
import { figure, now, sleep } from '../stats.js';

/** Runs `count` tasks, `concurrency` at a time. */
async function pool(count: number, concurrency: number, task: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next;
        next += 1;
        await task(i);
      }
    }),
  );
}

/**
 * An agent in flight during the rotation: trips that take a while (its tool sleeps), then a refund, held for a
 * person's approval when `hold`.
 */
function inFlightAgent(store: DurableStore, trips: number, hold: boolean) {
  return defineAgent({
    name: hold ? 'in-flight-held' : 'in-flight',
    model: scriptedModel(
      (_request, turn) =>
        turn < trips
          ? { text: `step ${turn}`, toolCalls: [{ id: `c${turn}`, name: 'slow', args: { turn } }] }
          : turn === trips
            ? { toolCalls: [{ id: 'refund', name: 'refund', args: { order: 'order 17' } }] }
            : { text: 'done' },
      { recordCalls: false },
    ),
    tools: [
      defineTool({
        name: 'slow',
        description: 'Takes a while.',
        input: z.object({ turn: z.number() }),
        execute: async ({ turn }) => (await sleep(20 + Math.random() * 30), { turn, card: '4111' }),
      }),
      defineTool({
        name: 'refund',
        description: 'Refunds an order.',
        input: z.object({ order: z.string() }),
        execute: () => ({ refunded: true }),
      }),
    ],
    approval: { tools: { refund: hold } },
    maxTrips: trips + 3,
    durable: { store, leaseMs: 30_000 },
  });
}

const seconds = (ms: number) => ms / 1000;
const one = (key: string, label: string, unit: string, value: number): Metric => ({
  key,
  label,
  unit,
  figure: figure([value]),
});

/**
 * Row 15: rotating the payload key over `storedRuns` runs on store-pg while `inFlight` runs go on. The runs are
 * written under k1; then every process reads k1 and k2 and writes k2 (the in-flight runs go on under such a
 * store), and `reencrypt` moves the stored payloads while they run; a second pass after they end moves what their
 * holders wrote over meanwhile; then k1 is retired and every run is read with k2 alone.
 */
export async function rotationRow(ctx: BenchContext): Promise<Row> {
  const { storedRuns, inFlight, trips, concurrency } = ctx.config.rotation;
  const k1 = randomBytes(32);
  const k2 = randomBytes(32);
  const codecOf = (keys: Record<string, Buffer>, current: string) => ({
    codec: [deflateCodec(), aesGcmCodec({ keys, current })],
  });
  const schema = freshSchema('bench_rotation');
  await migrateSchema(ctx, schema);
  const opened = openStore(ctx, schema, 40);
  try {
    const v1 = protectPayloads(opened.store, codecOf({ k1 }, 'k1'));
    // The deploy's first step gave every process k2 to read: an old process writes k1, a new one k2.
    const old = protectPayloads(opened.store, codecOf({ k1, k2 }, 'k1'));
    const v2 = protectPayloads(opened.store, codecOf({ k1, k2 }, 'k2'));
    const only2 = protectPayloads(opened.store, codecOf({ k2 }, 'k2'));

    ctx.log(`rotation: writing ${storedRuns} runs of 2 trips (1 KB payloads) under k1`);
    const seeding = now();
    const stored = payloadAgent({ name: 'stored', trips: 2, store: v1 });
    await pool(storedRuns, concurrency, async (i) => {
      await stored.execute(`order ${i}`, { runId: `stored-${i}` });
    });
    const seedMs = now() - seeding;

    ctx.log(
      `rotation: ${inFlight} runs kept in flight (old processes writing k1, new ones k2) while reencrypt moves the stored runs`,
    );
    // Lanes of runs one after another, until the pass is done: half run by an old process (writing k1, as one
    // not yet replaced by the deploy), half by a new one (reading both, writing k2); every tenth is held for a
    // person's approval, given while the pass runs.
    const agents = {
      old: [inFlightAgent(old, trips, false), inFlightAgent(old, trips, true)],
      new: [inFlightAgent(v2, trips, false), inFlightAgent(v2, trips, true)],
    } as const;
    let failures = 0;
    /** Why in-flight runs failed: a failure the bar counts must say what it was. */
    const failedWith = new Map<string, number>();
    let flown = 0;
    let passDone = false;
    let started = 0;
    const lane = async () => {
      while (!passDone) {
        const i = (started += 1);
        const side = i % 2 === 0 ? 'old' : 'new';
        const store = side === 'old' ? old : v2;
        const agent = agents[side][i % 10 === 0 ? 1 : 0];
        const runId = `flying-${i}`;
        try {
          try {
            await agent.execute('go', { runId });
          } catch (error) {
            if (!(error instanceof RunWaitingError)) throw error;
            const [call] = pendingApprovals((await store.load(runId))!.run.wait!.detail);
            await agent.approve(runId, call!.callId, { argsHash: call!.argsHash, by: 'bench' });
            await agent.resume(runId);
          }
          flown += 1;
        } catch (error) {
          failures += 1;
          const code = (error as { code?: unknown } | null)?.code;
          const why = `${typeof code === 'string' ? code : 'error'}: ${String((error as Error | null)?.message ?? error).slice(0, 200)}`;
          failedWith.set(why, (failedWith.get(why) ?? 0) + 1);
          ctx.log(`rotation: in-flight run ${runId} (${side} process) failed: ${why}`);
        }
      }
    };
    const flying = Array.from({ length: inFlight }, lane);
    const passing = now();
    const pass = await v2.reencrypt!({ concurrency }).finally(() => (passDone = true));
    const passMs = now() - passing;
    await Promise.all(flying);
    // The old processes are gone: a pass moves what they wrote with k1 meanwhile.
    const after = await v2.reencrypt!({ concurrency });

    ctx.log('rotation: k1 retired; reading every run with k2 alone');
    let read = 0;
    let unreadable = 0;
    for (let after: string | undefined; ;) {
      const page = await opened.store.list({
        limit: 1_000,
        ...(after === undefined ? {} : { after }),
      });
      if (page.length === 0) break;
      await pool(page.length, concurrency, async (i) => {
        const { runId } = page[i]!;
        try {
          await only2.load(runId);
          await only2.mailbox(runId);
        } catch {
          unreadable += 1;
        }
      });
      read += page.length;
      after = page.at(-1)!.runId;
    }
    return {
      key: 'rotation',
      title: `15. Key rotation: ${storedRuns} stored runs moved from k1 to k2 with ${inFlight} in flight (store-pg)`,
      metrics: [
        one('seed_s', `writing ${storedRuns} runs under k1`, 's', seconds(seedMs)),
        one('pass_s', 'the re-encryption pass, with runs in flight', 's', seconds(passMs)),
        one('pass_runs_per_s', 'runs moved per second', 'runs/s', pass.runs / seconds(passMs)),
        one('pass_payloads', 'payloads moved by the pass', '', pass.payloads),
        one('pass_raced', 'payloads written over by holders during the pass', '', pass.raced),
        one('pass_unreadable', 'runs the pass could not read', '', pass.unreadable.length),
        one(
          'second_pass_payloads',
          'payloads the pass after the in-flight runs ended moved',
          '',
          after.payloads,
        ),
        one('in_flight_runs', 'runs completed in flight during the pass', '', flown),
        one('in_flight_failures', 'in-flight runs that failed', '', failures),
        one('runs_read_after', 'runs read with k2 alone after k1 was retired', '', read),
        one('unreadable_after', 'of them unreadable (bar: 0)', '', unreadable),
      ],
      notes: [
        `${concurrency} runs re-encoded at a time; ${inFlight} runs kept in flight through the pass, half by an old process (writing k1), half by a new one (writing k2): ${trips} trips with a 20-50 ms tool each, every tenth holding a refund for approval (approved during the pass)`,
        'each stored run: 2 trips of about 1 KB of model text, tool arguments and tool result, deflate + AES-256-GCM',
        ...[...failedWith].map(([why, count]) => `in-flight failure (${count}x): ${why}`),
      ],
    };
  } finally {
    await opened.close();
    await dropSchema(ctx, schema);
  }
}
