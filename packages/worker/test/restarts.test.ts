import { randomBytes } from 'node:crypto';
import { pgStore, type PgStore } from '@cairn/store-pg';
import { useTestDatabase } from '@cairn/testing';
import { createClient, type CairnClient } from '@cairn/worker';
import postgres, { type Sql } from 'postgres';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { processAgent, unknownCalls } from './fixtures/agents.js';
import { endProcessTest, startWorkerProcess, type WorkerProcess } from './processes.js';

// Worker processes through restarts of their Postgres server. The server is an embedded one of this file's
// own: the machine's shared server, which other test files use at the same time, is never restarted.
const database = useTestDatabase({ prefix: 'cairn_worker_restarts', embedded: true });
let sql: Sql;
let store: PgStore;
let schema: string;
let client: CairnClient;
const processes: WorkerProcess[] = [];

const restarts = 6;
const restartEveryMs = 10_000;
const runCount = 20;
// Each of a run's three tools takes this long, so every run is in flight through every restart.
const toolMs = 30_000;

beforeAll(() => {
  sql = postgres(database().url, { max: 5, onnotice: () => undefined });
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});
beforeEach(async () => {
  schema = `rs_${randomBytes(5).toString('hex')}`;
  store = pgStore({ sql, schema });
  await store.migrate();
  client = createClient({ store });
});
afterEach(() => endProcessTest(processes, store, sql, schema));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('worker processes while their Postgres server restarts', () => {
  it(`${restarts} restarts ${restartEveryMs / 1000} s apart with ${runCount} runs in flight: every run completes, none recovered or dead-lettered, no tool runs twice`, async () => {
    const env = {
      DATABASE_URL: database().url,
      CAIRN_SCHEMA: schema,
      // Room for more than its share: each worker keeps claiming, so it would take the other's runs if it
      // took the other's lost session for a dead one.
      CONCURRENCY: '15',
      // Renewed every 5 s, each renewal tried again for up to 5 s: every restart falls on renewals, and one
      // that waits out the restart keeps its lease.
      LEASE_MS: '15000',
      SLOW_MS: String(toolMs),
      SLOW_STEPS: '1,2,3',
      // The server is down while a side effect happens: the workers print them instead of writing them.
      EFFECTS: 'print',
    };
    const workers = await Promise.all(
      ['w0', 'w1'].map((owner) => startWorkerProcess({ ...env, OWNER: owner })),
    );
    processes.push(...workers);
    // Started half a second apart, so the restarts find runs at every point of their trips.
    const runIds: string[] = [];
    for (let i = 0; i < runCount; i += 1) {
      runIds.push((await client.start(processAgent(sql, schema, 0), `run ${i}`)).runId);
      await sleep(500);
    }
    const inFlight: number[] = [];
    for (let i = 0; i < restarts; i += 1) {
      await sleep(restartEveryMs);
      inFlight.push((await client.list({ status: ['queued', 'running'] })).length);
      await database().restart!();
    }
    for (const runId of runIds)
      expect(await client.result(runId, { pollMs: 200 })).toBe('three steps done');

    const events = workers.flatMap((worker) => worker.lines.filter((l) => l.kind === 'event'));
    const ran = new Map<string, number>();
    for (const line of workers.flatMap((worker) => worker.lines)) {
      if (line.kind !== 'effect') continue;
      const key = `${line.runId}/${String(line.toolCallId)}`;
      ran.set(key, (ran.get(key) ?? 0) + 1);
    }
    const unknown = new Map<string, Set<string>>();
    for (const runId of runIds) unknown.set(runId, new Set(await unknownCalls(store, runId)));
    const count = (type: string) => events.filter((e) => e.type === type).length;
    const [{ sessions }] = await sql<[{ sessions: number }]>`
      select count(*)::int as sessions from ${sql(schema)}.sessions`;
    console.log(
      `restarts: ${restarts} restarts with ${inFlight.join(', ')} runs in flight, ` +
        `${sessions} sessions opened, ${count('claimed')} claims, ` +
        `${count('lease_lost')} leases lost, ${count('skipped')} runs put back, ` +
        `${count('error')} claim errors, ` +
        `${[...unknown.values()].reduce((n, calls) => n + calls.size, 0)} calls reported outcome unknown`,
    );

    // Both workers lived through every restart and took part.
    for (const worker of workers) {
      expect(await Promise.race([worker.exited, Promise.resolve('running')])).toBe('running');
      expect(worker.events('claimed').length).toBeGreaterThan(0);
    }
    expect(events.filter((e) => e.type === 'dead_lettered' || e.type === 'failed')).toEqual([]);
    // Every early stop is named by a Cairn code (issue 15, point 3: restarts made UNKNOWN ones).
    expect(events.filter((e) => 'code' in e && e.code === 'UNKNOWN')).toEqual([]);
    expect(await client.list({ status: 'dead_lettered' })).toEqual([]);
    // A lost connection is not a death: no run was ever taken from a holder that died.
    const records = await Promise.all(runIds.map(async (runId) => (await store.load(runId))!.run));
    expect(records.map((run) => [run.runId, run.recoveries])).toEqual(
      runIds.map((runId) => [runId, 0]),
    );
    // No tool ran twice; one whose outcome a run could not know is reported unknown, and ran at most once.
    for (const runId of runIds) {
      for (const call of ['a1', 'a2', 'a3']) {
        const n = ran.get(`${runId}/${call}`) ?? 0;
        if (unknown.get(runId)!.has(call)) expect(n, `${runId} ${call}`).toBeLessThanOrEqual(1);
        else expect(n, `${runId} ${call}`).toBe(1);
      }
    }
    // Every restart found runs in flight: the test showed something.
    expect(inFlight.filter((n) => n === 0)).toEqual([]);
  }, 240_000);
});
