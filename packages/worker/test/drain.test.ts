import { randomBytes } from 'node:crypto';
import { defineAgent, defineTool } from '@cairn/sdk';
import { pgStore, type PgStore } from '@cairn/store-pg';
import { scriptedModel, useTestDatabase } from '@cairn/testing';
import { createClient, createWorker, type Worker, type WorkerEvent } from '@cairn/worker';
import postgres, { type Sql } from 'postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';

const database = useTestDatabase({ prefix: 'cairn_worker_drain' });
let sql: Sql;
beforeAll(() => {
  sql = postgres(database().url, { max: 20, onnotice: () => undefined });
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

const runs = Number(process.env.CAIRN_DRAIN_RUNS ?? 10_000);

/** Two trips of one tool call each, then an answer; the tool counts its calls per run. */
function drainAgent(calls: Map<string, number>) {
  const tick = defineTool({
    name: 'tick',
    description: 'Counts.',
    input: z.object({ n: z.number() }),
    execute: ({ n }, ctx) => {
      const key = `${ctx.runId}/${ctx.toolCallId}`;
      calls.set(key, (calls.get(key) ?? 0) + 1);
      return { n };
    },
  });
  const model = scriptedModel((_request, turn) =>
    turn < 2
      ? { toolCalls: [{ id: `t${turn}`, name: 'tick', args: { n: turn } }] }
      : { text: 'drained' },
  );
  return defineAgent({ name: 'drain', model, tools: [tick], maxTrips: 4 });
}

it(`drains ${runs} queued runs with 3 workers: each run claimed once, completed once, never re-claimed`, async () => {
  const schema = `drain_${randomBytes(5).toString('hex')}`;
  const stores: PgStore[] = [];
  const open = () => {
    const store = pgStore({ sql, schema });
    stores.push(store);
    return store;
  };
  await open().migrate();
  const calls = new Map<string, number>();
  const agent = drainAgent(calls);
  const client = createClient({ store: open() });
  const ids: string[] = [];
  for (let start = 0; start < runs; start += 500) {
    const batch = Array.from({ length: Math.min(500, runs - start) }, (_, i) =>
      client.start(agent, `run ${start + i}`),
    );
    ids.push(...(await Promise.all(batch)).map((started) => started.runId));
  }
  const claimed = new Map<string, number>();
  const completed = new Map<string, number>();
  const problems: string[] = [];
  let finished = 0;
  let allDone!: () => void;
  const done = new Promise<void>((resolve) => (allDone = resolve));
  const onEvent = (event: WorkerEvent) => {
    if (event.type === 'claimed') claimed.set(event.runId, (claimed.get(event.runId) ?? 0) + 1);
    else if (event.type === 'completed') {
      completed.set(event.runId, (completed.get(event.runId) ?? 0) + 1);
      if ((finished += 1) === runs) allDone();
    } else if (event.type === 'failed' || event.type === 'error' || event.type === 'suspended') {
      problems.push(JSON.stringify(event));
    }
  };
  const workers: Worker[] = ['w1', 'w2', 'w3'].map((owner) =>
    createWorker({
      store: open(),
      agents: [agent],
      owner,
      concurrency: 100,
      pollMs: 100,
      shutdownSignals: [],
      onEvent,
    }),
  );
  try {
    await Promise.all(workers.map((worker) => worker.start()));
    await done;
    expect(problems).toEqual([]);
    expect(ids.filter((id) => claimed.get(id) !== 1)).toEqual([]);
    expect(ids.filter((id) => completed.get(id) !== 1)).toEqual([]);
    expect([...calls.values()].every((n) => n === 1)).toBe(true);
    expect(calls.size).toBe(runs * 2);
    const rows = await sql.unsafe<Array<{ status: string; epoch: number; n: number }>>(
      `select status, epoch::int, count(*)::int as n from "${schema}".runs group by 1, 2`,
    );
    expect(rows).toEqual([{ status: 'completed', epoch: 1, n: runs }]);
  } finally {
    await Promise.all(workers.map((worker) => worker.close()));
    await Promise.all(stores.map((store) => store.close()));
    await sql.unsafe(`drop schema if exists "${schema}" cascade`);
  }
}, 300_000);
