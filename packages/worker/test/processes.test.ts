import { randomBytes } from 'node:crypto';
import { pgStore, type PgStore } from '@cairn/store-pg';
import { useTestDatabase } from '@cairn/testing';
import { createClient, type CairnClient } from '@cairn/worker';
import postgres, { type Sql } from 'postgres';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createEffectsTable,
  effectsOf as effectsOfRun,
  processAgent,
  unknownCalls as unknownCallsOf,
} from './fixtures/agents.js';
import { endProcessTest, startWorkerProcess, type Line, type WorkerProcess } from './processes.js';

// Real worker processes against real Postgres: SIGKILL, SIGSTOP/SIGCONT, SIGTERM, races and a soak.
const database = useTestDatabase({ prefix: 'cairn_worker_processes' });
let sql: Sql;
let store: PgStore;
let schema: string;
let client: CairnClient;
const processes: WorkerProcess[] = [];

beforeAll(() => {
  sql = postgres(database().url, { max: 5, onnotice: () => undefined });
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});
beforeEach(async () => {
  schema = `w_${randomBytes(5).toString('hex')}`;
  store = pgStore({ sql, schema });
  await store.migrate();
  await createEffectsTable(sql, schema);
  client = createClient({ store });
});
afterEach(() => endProcessTest(processes, store, sql, schema));

const agent = () => processAgent(sql, schema, 0);

function worker(owner: string, env: Record<string, string> = {}): Promise<WorkerProcess> {
  const started = startWorkerProcess({
    DATABASE_URL: database().url,
    CAIRN_SCHEMA: schema,
    OWNER: owner,
    ...env,
  });
  void started.then((process) => processes.push(process));
  return started;
}

const effectsOf = (runId: string) => effectsOfRun(sql, schema, runId);
const unknownCalls = (runId: string) => unknownCallsOf(store, runId);

/** The advisory locks held in this file's database, by anyone. */
async function advisoryLocks(): Promise<Array<{ pid: number; key: string }>> {
  return sql<Array<{ pid: number; key: string }>>`
    select pid, ((classid::bigint << 32) | objid::bigint)::text as key from pg_locks
     where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())`;
}

// The soak's run count; CAIRN_SOAK_RUNS=2000 runs a longer one by hand, with kills in proportion.
const soakRuns = Number(process.env.CAIRN_SOAK_RUNS ?? 200);
const soakKills = Math.max(8, Math.round(soakRuns / 25));
const soakTimeoutMs = Math.max(180_000, soakRuns * 300);

describe('worker processes on Postgres', () => {
  it('SIGKILL mid-tool: another worker finishes; settled tools ran once, the in-flight one is unknown', async () => {
    const doomed = await worker('doomed', { CRASH_AT: 'effect.after@trip-1/tool/a2' });
    const { runId } = await client.start(agent(), 'go');
    expect((await doomed.exited).signal).toBe('SIGKILL');
    const survivor = await worker('survivor');
    expect(await client.result(runId, { pollMs: 50 })).toBe('three steps done');
    expect(await effectsOf(runId)).toEqual({ a1: 1, a2: 1, a3: 1 });
    expect(await unknownCalls(runId)).toEqual(['a2']);
    expect(survivor.events('claimed')[0]).toMatchObject({ runId, takenFrom: 'doomed', epoch: 2 });
  });

  it('SIGKILL mid-tool, traced: one story across both processes, each model call counted once', async () => {
    const doomed = await worker('doomed', {
      CRASH_AT: 'effect.after@trip-1/tool/a2',
      TRACE: 'print',
    });
    const { runId } = await client.start(agent(), 'go');
    expect((await doomed.exited).signal).toBe('SIGKILL');
    const survivor = await worker('survivor', { TRACE: 'print' });
    expect(await client.result(runId, { pollMs: 50 })).toBe('three steps done');
    // The run span ends after the run's last write commits, so the result can be read before it is printed.
    await survivor.waitFor((line) => line.kind === 'span' && line.name === 'cairn.run', 10_000);
    const spans = (process: WorkerProcess, name: string) =>
      process.lines.filter((line) => line.kind === 'span' && line.name === name) as Array<
        Line & {
          spanId: string;
          parentSpanId: string | null;
          links: string[];
          attributes: Record<string, unknown>;
        }
      >;
    // The killed attempt's run span never ended; the survivor's is resumed and links to it, and the spans
    // the first attempt finished (its first trip) hang under that same run span.
    const [resumed, ...others] = spans(survivor, 'cairn.run');
    expect(others).toEqual([]);
    expect(resumed!.attributes).toMatchObject({ 'cairn.run.resumed': true, 'cairn.run.epoch': 2 });
    expect(resumed!.links).toHaveLength(1);
    const origin = resumed!.links[0];
    const firstTrips = spans(doomed, 'cairn.trip');
    expect(firstTrips.length).toBeGreaterThan(0);
    for (const trip of firstTrips) expect(trip.parentSpanId).toBe(origin);
    // Token sums over every chat span of both processes equal the run's usage: no model call twice.
    const chats = [...spans(doomed, 'chat scripted'), ...spans(survivor, 'chat scripted')];
    const inputTokens = chats.reduce(
      (sum, chat) => sum + Number(chat.attributes['gen_ai.usage.input_tokens']),
      0,
    );
    const usage = (
      (await store.load(runId))!.run.snapshot as { state: { usage: { inputTokens: number } } }
    ).state.usage;
    expect(chats).toHaveLength(4);
    expect(inputTokens).toBe(usage.inputTokens);
  });

  it('SIGKILL mid-checkpoint: another worker finishes from the checkpoint before; no tool ran twice', async () => {
    // The third checkpoint would have recorded a2's result (its settled mark rides on that checkpoint): the
    // survivor continues from the second, where a2 was started and never recorded, so it reports a2 unknown.
    const doomed = await worker('doomed', { CRASH_AT: 'checkpoint.before#3' });
    const { runId } = await client.start(agent(), 'go');
    expect((await doomed.exited).signal).toBe('SIGKILL');
    await worker('survivor');
    expect(await client.result(runId, { pollMs: 50 })).toBe('three steps done');
    expect(await effectsOf(runId)).toEqual({ a1: 1, a2: 1, a3: 1 });
    expect(await unknownCalls(runId)).toEqual(['a2']);
  });

  it('SIGKILL right after a checkpoint: nothing settled before it is run again or reported unknown', async () => {
    const doomed = await worker('doomed', { CRASH_AT: 'checkpoint.after#3' });
    const { runId } = await client.start(agent(), 'go');
    expect((await doomed.exited).signal).toBe('SIGKILL');
    await worker('survivor');
    expect(await client.result(runId, { pollMs: 50 })).toBe('three steps done');
    expect(await effectsOf(runId)).toEqual({ a1: 1, a2: 1, a3: 1 });
    expect(await unknownCalls(runId)).toEqual([]);
  });

  it('SIGSTOP past the lease, then SIGCONT: the frozen worker writes nothing after the takeover', async () => {
    const frozen = await worker('frozen', { LEASE_MS: '1200', SLOW_MS: '3000' });
    const { runId } = await client.start(agent(), 'go');
    await frozen.waitFor(
      (l) =>
        l.kind === 'boundary' && l.point === 'effect.before' && l.effectId === 'trip-1/tool/a2',
    );
    frozen.kill('SIGSTOP');
    const survivor = await worker('survivor', { LEASE_MS: '1200' });
    expect(await client.result(runId, { pollMs: 50 })).toBe('three steps done');
    const writesBefore = frozen.lines.length;
    frozen.kill('SIGCONT');
    await frozen.waitFor((l) => l.kind === 'event' && l.type === 'lease_lost' && l.runId === runId);
    const afterWake = frozen.lines.slice(writesBefore);
    expect(
      afterWake.filter(
        (l) =>
          l.kind === 'boundary' && /\.after$/.test(String(l.point)) && l.point !== 'effect.after',
      ),
    ).toEqual([]);
    expect(frozen.events('completed')).toEqual([]);
    expect(survivor.events('claimed')[0]).toMatchObject({ runId, takenFrom: 'frozen' });
    expect(await unknownCalls(runId)).toEqual(['a2']);
    expect(await effectsOf(runId)).toEqual({ a1: 1, a2: 1, a3: 1 });
  });

  it('SIGTERM hands the run over: another worker takes it without waiting for the 60 s lease', async () => {
    const leaving = await worker('leaving', { LEASE_MS: '60000', SLOW_MS: '1500' });
    const { runId } = await client.start(agent(), 'go');
    await leaving.waitFor(
      (l) =>
        l.kind === 'boundary' && l.point === 'effect.before' && l.effectId === 'trip-1/tool/a2',
    );
    leaving.kill('SIGTERM');
    expect((await leaving.exited).code).toBe(0);
    expect(leaving.events('handed_over')).toMatchObject([{ runId }]);
    // The in-flight tool finished and was journaled before the hand-over; the next one never started here.
    expect(leaving.lines.some((l) => l.effectId === 'trip-2/tool/a3')).toBe(false);
    const staying = await worker('staying', { LEASE_MS: '60000' });
    expect(await client.result(runId, { pollMs: 50 })).toBe('three steps done');
    expect(staying.events('claimed')[0]).toMatchObject({ runId, takenFrom: null });
    expect(await effectsOf(runId)).toEqual({ a1: 1, a2: 1, a3: 1 });
    expect(await unknownCalls(runId)).toEqual([]);
  });

  it('N workers racing for one run: exactly one claims it', async () => {
    const racers = await Promise.all(['r1', 'r2', 'r3', 'r4'].map((owner) => worker(owner)));
    const { runId } = await client.start(agent(), 'go');
    expect(await client.result(runId, { pollMs: 50 })).toBe('three steps done');
    const claims = racers.flatMap((racer) => racer.events('claimed'));
    expect(claims).toHaveLength(1);
    expect((await store.load(runId))?.run.epoch).toBe(1);
  });

  it(
    `soak: ${soakRuns} runs across 3 workers with random kills all end, every settled side effect counted once, no lock left`,
    async () => {
      const started = Date.now();
      // Slow second steps keep runs in flight long enough for the kills to land mid-run.
      const env = { CONCURRENCY: '10', LEASE_MS: '3000', MAX_RECOVERIES: '50', SLOW_MS: '2500' };
      const live = await Promise.all(['s0', 's1', 's2'].map((owner) => worker(owner, env)));
      const runIds: string[] = [];
      for (let i = 0; i < soakRuns; i += 1)
        runIds.push((await client.start(agent(), `run ${i}`)).runId);
      // Kill a random worker at random moments and start a new one in its place, a bounded number of times.
      let kills = 0;
      let generation = 0;
      while (kills < soakKills) {
        const done = await client.list({ status: 'completed' });
        if (done.length === runIds.length) break;
        await new Promise((resolve) => setTimeout(resolve, 150 + Math.floor(Math.random() * 250)));
        const index = Math.floor(Math.random() * live.length);
        live[index]!.kill('SIGKILL');
        await live[index]!.exited;
        kills += 1;
        live[index] = await worker(`s${index}-${++generation}`, env);
      }
      for (const runId of runIds)
        expect(await client.result(runId, { pollMs: 100 })).toBe('three steps done');
      const rows = await sql.unsafe<Array<{ run_id: string; tool_call_id: string; n: number }>>(
        `select run_id, tool_call_id, n from "${schema}".effects`,
      );
      const counted = new Map(rows.map((row) => [`${row.run_id}/${row.tool_call_id}`, row.n]));
      let unknown = 0;
      for (const runId of runIds) {
        const reported = new Set(await unknownCalls(runId));
        unknown += reported.size;
        for (const call of ['a1', 'a2', 'a3']) {
          const n = counted.get(`${runId}/${call}`) ?? 0;
          // A call reported unknown was in flight at a kill: it ran at most once. Every other ran exactly once.
          if (reported.has(call)) expect(n, `${runId} ${call}`).toBeLessThanOrEqual(1);
          else expect(n, `${runId} ${call}`).toBe(1);
        }
      }
      const takeovers = processes.flatMap((p) => p.events('claimed')).filter((e) => e.takenFrom);
      console.log(
        `soak: ${soakRuns} runs, ${kills} kills, ${takeovers.length} runs taken over from a killed worker, ` +
          `${unknown} calls reported outcome unknown, ${Math.round((Date.now() - started) / 1000)} s`,
      );
      expect(kills).toBeGreaterThanOrEqual(3);
      // One advisory lock per live worker, whatever it held; the killed workers' went with their connections,
      // and the client's store holds none (starting and reading runs needs no session).
      expect(await advisoryLocks()).toHaveLength(live.length);
      // Closed, the live ones' locks go with their stores.
      for (const survivor of live) survivor.kill('SIGTERM');
      for (const survivor of live) expect((await survivor.exited).code).toBe(0);
      for (let i = 0; i < 100 && (await advisoryLocks()).length > 0; i += 1)
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await advisoryLocks()).toEqual([]);
    },
    soakTimeoutMs,
  );
});

describe("a definition's own settings, through a worker process", () => {
  it('its leaseMs is what the worker renews the run with when the worker sets none', async () => {
    const slow = await worker('slow', { DEF_LEASE_MS: '3000', SLOW_MS: '4000' });
    const { runId } = await client.start(agent(), 'go');
    await slow.waitFor(
      (line) =>
        line.kind === 'effect' || (line.kind === 'boundary' && line.effectId === 'trip-1/tool/a2'),
    );
    // Claimed with the worker's default lease (30 s); renewed every second with the definition's 3 s.
    const leaseMs = async () =>
      (
        await sql.unsafe<Array<{ ms: number }>>(
          `select round(extract(epoch from lease_until - heartbeat_at) * 1000)::int as ms
             from "${schema}".runs where run_id = $1`,
          [runId],
        )
      )[0]?.ms;
    for (let i = 0; i < 100 && (await leaseMs()) !== 3000; i += 1)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await leaseMs()).toBe(3000);
    expect(await client.result(runId, { pollMs: 50 })).toBe('three steps done');
  });

  it('its deleteOnComplete deletes the run once the worker completes it', async () => {
    const deleting = await worker('deleting', { DEF_DELETE_ON_COMPLETE: '1' });
    const { runId } = await client.start(agent(), 'go');
    await deleting.waitFor((line) => line.kind === 'event' && line.type === 'completed');
    for (let i = 0; i < 100 && (await store.load(runId)) !== undefined; i += 1)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await store.load(runId)).toBeUndefined();
  });

  it('its tracerProvider traces the runs when the worker has none', async () => {
    const traced = await worker('traced', { TRACE: 'definition' });
    const { runId } = await client.start(agent(), 'go');
    expect(await client.result(runId, { pollMs: 50 })).toBe('three steps done');
    await traced.waitFor((line) => line.kind === 'span' && line.name === 'cairn.run');
    const run = traced.lines.find((line) => line.kind === 'span' && line.name === 'cairn.run');
    expect(run).toMatchObject({
      attributes: { 'cairn.run.id': runId, 'cairn.run.resumed': false },
    });
  });

  it('its owner is not the one that claims: the worker claims as itself', async () => {
    const claiming = await worker('the-worker', { DEF_OWNER: 'the-definition', SLOW_MS: '60000' });
    const { runId } = await client.start(agent(), 'go');
    await claiming.waitFor((line) => line.kind === 'event' && line.type === 'claimed');
    expect((await store.load(runId))?.run.owner).toBe('the-worker');
  });

  it.each([
    ['the definition’s 2 attempts, the worker setting none', {}, 2],
    ['the worker’s 3 attempts, over the definition’s 2', { STORE_RETRY: '3' }, 3],
  ])(
    'its storeRetry bounds the tries of a checkpoint the database refuses retryably: %s',
    async (_case, workerEnv, attempts) => {
      // Every checkpoint is refused with a serialization failure (retryable); a sequence, which a rollback
      // does not undo, counts the attempts.
      await sql.unsafe(`
        create sequence "${schema}".checkpoint_attempts;
        create function "${schema}".refuse_checkpoint() returns trigger language plpgsql as $$
        begin
          perform nextval('"${schema}".checkpoint_attempts');
          raise exception 'refused by the test' using errcode = '40001';
        end $$;
        create trigger refuse_checkpoint before update on "${schema}".runs for each row
          when (new.checkpoint_seq is distinct from old.checkpoint_seq)
          execute function "${schema}".refuse_checkpoint();`);
      const retrying = await worker('retrying', { DEF_STORE_RETRY: '2', ...workerEnv });
      await client.start(agent(), 'go');
      await retrying.waitFor((line) => line.kind === 'event' && line.type === 'suspended');
      const [counted] = await sql.unsafe<Array<{ n: number }>>(
        `select case when is_called then last_value else 0 end::int as n
           from "${schema}".checkpoint_attempts`,
      );
      expect(counted?.n).toBe(attempts);
    },
  );
});
