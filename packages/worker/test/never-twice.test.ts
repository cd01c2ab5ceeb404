import { randomBytes } from 'node:crypto';
import {
  childRunId,
  defineAgent,
  definePlanner,
  defineTool,
  isCairnError,
  LeaseHeldError,
  memoryStore,
  type DurableStore,
} from '@cairn/sdk';
import { pgStore, type PgStore } from '@cairn/store-pg';
import { createFakeClock, scriptedModel, useTestDatabase } from '@cairn/testing';
import { createClient, createWorker } from '@cairn/worker';
import postgres, { type Sql } from 'postgres';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { gate, orderAgent, until } from './support.js';

const database = useTestDatabase({ prefix: 'cairn_worker_never_twice' });
let sql: Sql;
let schema: string;
const stores: PgStore[] = [];
const closers: Array<() => Promise<void>> = [];

beforeAll(() => {
  sql = postgres(database().url, { max: 5, onnotice: () => undefined });
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});
beforeEach(async () => {
  schema = `w_${randomBytes(5).toString('hex')}`;
  await openStore().migrate();
});
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
  await Promise.all(stores.splice(0).map((store) => store.close()));
  await sql.unsafe(`drop schema if exists "${schema}" cascade`);
});

function openStore(): PgStore {
  const store = pgStore({ sql, schema });
  stores.push(store);
  return store;
}

/** The advisory locks of this file's database still held by any backend. */
async function advisoryLocks(): Promise<number> {
  const rows = await sql<{ n: number }[]>`
    select count(*)::int as n from pg_locks
     where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())`;
  return rows[0]!.n;
}

const long = 60_000;

describe('a claim that ends any way but a crash (invariant 14, DESIGN.md step 6)', () => {
  it('neither fails nor keeps the run when an observer callback throws after the claim', async () => {
    const store = openStore();
    const { agent, effects } = orderAgent(store);
    const client = createClient({ store });
    const { runId } = await client.start(agent, 'go');
    const worker = createWorker({
      store,
      agents: [agent],
      pollMs: 20,
      shutdownSignals: [],
      onEvent: (event) => {
        if (event.type === 'claimed') throw new Error('a dashboard hook failed');
      },
    });
    closers.push(() => worker.close());
    await worker.start();
    expect(await client.result(runId, { pollMs: 20, timeoutMs: 20_000 })).toBe('all steps done');
    expect(effects).toEqual({ s1: 1, s2: 1 });
    expect(await client.get(runId)).toMatchObject({ owner: null, held: false, recoveries: 0 });
    // One advisory lock: the store's liveness session, never one per run.
    expect(await advisoryLocks()).toBe(1);
  });

  it('gives a lease lost through a refused write up, so the same store claims the run again', async () => {
    const store = openStore();
    const thief = openStore();
    // The holder's renewals hang (a stalled lock session): its lease runs out and another worker takes it.
    let hang = true;
    const stalled: DurableStore = {
      ...store,
      renew: (lease, ttl) => (hang ? new Promise(() => undefined) : store.renew(lease, ttl)),
    };
    const tookOver = gate();
    let calls = 0;
    const slow = defineTool({
      name: 'slow',
      description: 'Waits until the run was taken over.',
      input: z.object({}),
      idempotent: true,
      execute: async () => {
        calls += 1;
        if (calls === 1) await tookOver.opened;
        return { ok: true };
      },
    });
    const make = (durable: { store: DurableStore; leaseMs: number }) =>
      defineAgent({
        name: 'slow',
        model: scriptedModel([
          { toolCalls: [{ id: 't1', name: 'slow', args: {} }] },
          { text: 'done' },
        ]),
        tools: [slow],
        durable,
      });
    const first = make({ store: stalled, leaseMs: 600 }).execute('go', { runId: 'r' });
    await until(() => calls === 1);
    await new Promise((resolve) => setTimeout(resolve, 800));
    const taken = await thief.acquire('r', { owner: 'thief', ttlMs: 500 });
    expect(taken).toBeDefined();
    tookOver.open();
    await expect(first).rejects.toMatchObject({ code: 'LEASE_LOST' });

    // The thief goes away; the same store instance claims the run again and finishes it.
    await new Promise((resolve) => setTimeout(resolve, 600));
    hang = false;
    const again = await make({ store: stalled, leaseMs: long }).resume('r');
    expect(again.output).toBe('done');
    // One advisory lock per open store (its liveness session), never one per run.
    expect(await advisoryLocks()).toBe(2);
  });
});

describe('client.discard with a client clock far ahead (invariant 1)', () => {
  const makers: Record<string, () => DurableStore> = {
    postgres: () => openStore(),
    memory: () => memoryStore(),
  };
  for (const [name, make] of Object.entries(makers)) {
    it(`${name}: refuses to delete a run a live lease holds, whatever the client's clock says`, async () => {
      const store = make();
      await store.create({
        runId: 'r',
        kind: 'agent',
        name: 'held',
        signature: 's',
        snapshot: null,
      });
      const lease = (await store.acquire('r', { owner: 'worker', ttlMs: long }))!;
      const skewed = createFakeClock({ now: Date.now() + 3_600_000 });
      const client = createClient({ store, clock: skewed });
      await expect(client.discard('r')).rejects.toBeInstanceOf(LeaseHeldError);
      expect((await store.load('r'))?.run).toMatchObject({ owner: 'worker', epoch: lease.epoch });
      await store.append(lease, [{ seq: 1, type: 'started', effectId: 'e1', at: 1 }]);
    });
  }
});

describe('a child run under a live parent', () => {
  it('is neither started, cancelled nor discarded on its own, and a second worker never runs it', async () => {
    const store = openStore();
    const other = openStore();
    const hold = gate();
    const booked: string[] = [];
    const book = defineTool({
      name: 'book_hotel',
      description: 'Books a hotel.',
      input: z.object({}),
      execute: async () => {
        hold.enter();
        await hold.opened;
        booked.push('hotel');
        return { booked: true };
      },
    });
    const concierge = defineAgent({
      name: 'concierge',
      model: scriptedModel([
        { toolCalls: [{ id: 'b1', name: 'book_hotel', args: {} }] },
        { text: 'booked' },
      ]),
      tools: [book],
    });
    const plan = {
      nodes: [{ id: 'hotel', capability: 'concierge', input: 'book', dependsOn: [] }],
    };
    const planner = definePlanner({
      name: 'trip',
      model: scriptedModel([{ text: JSON.stringify(plan) }]),
      capabilities: [{ name: 'concierge', description: 'Books.', executable: concierge }],
    });
    const client = createClient({ store });
    const { runId } = await client.start(planner, 'a trip');
    const worker = createWorker({
      store,
      planners: [planner],
      agents: [concierge],
      pollMs: 20,
      shutdownSignals: [],
    });
    const intruder = createWorker({
      store: other,
      agents: [concierge],
      pollMs: 20,
      shutdownSignals: [],
    });
    closers.push(
      () => worker.close(),
      () => intruder.close(),
    );
    await worker.start();
    await hold.reached;
    await intruder.start();
    const child = childRunId(runId, 'hotel');
    expect(await client.get(child)).toMatchObject({ held: true, rootRunId: runId });
    for (const act of [
      () => client.start(concierge, 'book', { runId: child }),
      () => client.start({ kind: 'agent', name: 'concierge' }, 'book', { runId: child }),
      () => client.cancel(child),
      () => client.discard(child),
    ]) {
      const refused = await act().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(isCairnError(refused) && refused.code).toBe('INVALID_ARGUMENT');
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(intruder.active()).toEqual([]);
    hold.open();
    expect(await client.result(runId, { pollMs: 20, timeoutMs: 20_000 })).toEqual({
      hotel: 'booked',
    });
    expect(booked).toEqual(['hotel']);
  });
});
