import { LeaseLostError, type JournalEntry, type Lease } from '@cairn/sdk';
import type { PgStore } from '@cairn/store-pg';
import { describe, expect, it } from 'vitest';
import { advisoryLocks, sleep, usePgHarnessPerTest } from './support.js';

const pg = usePgHarnessPerTest('cairn_sessions');

const long = 60_000;
const run = (runId: string) => ({
  runId,
  kind: 'agent',
  name: 'sessions',
  signature: 's',
  snapshot: { step: 0 },
});
const marks = (...seqs: number[]): JournalEntry[] =>
  seqs.map((seq) => ({ seq, type: 'started', effectId: `e${seq}`, at: seq }));
const definitions = [{ kind: 'agent', name: 'sessions' }];

/** The backend holding the liveness lock of the session a run is held through. */
async function sessionPid(runId: string): Promise<number | undefined> {
  const rows = await pg.sql().unsafe(
    `select l.pid from "${pg.harness().schema}".runs r
       join "${pg.harness().schema}".sessions s on s.id = r.holder_session
       join pg_locks l on l.locktype = 'advisory' and l.granted
                      and ((l.classid::bigint << 32) | l.objid::bigint) = s.lock_key
      where r.run_id = $1`,
    [runId],
  );
  return rows[0]?.pid as number | undefined;
}

async function runRow(runId: string) {
  const rows = await pg
    .sql()
    .unsafe(
      `select epoch::int, owner, recoveries, holder_session::int from "${pg.harness().schema}".runs where run_id = $1`,
      [runId],
    );
  return rows[0]!;
}

/** Claims `ids` through `store` as `owner`, one by one. */
async function claimAll(store: PgStore, owner: string, ids: readonly string[], ttlMs = long) {
  const leases: Lease[] = [];
  for (const id of ids) {
    await store.create(run(id));
    leases.push((await store.acquire(id, { owner, ttlMs }))!);
  }
  return leases;
}

describe('a liveness session', () => {
  it('is one advisory lock per store, whatever it holds, and none once the store is closed', async () => {
    const store = pg.harness().store();
    await claimAll(
      store,
      'a',
      Array.from({ length: 50 }, (_, i) => `many-${i}`),
    );
    expect(await advisoryLocks(pg.sql())).toBe(1);
    await store.close();
    // The server lets the lock go once the session's backend has exited.
    for (let i = 0; i < 100 && (await advisoryLocks(pg.sql())) > 0; i += 1) await sleep(20);
    expect(await advisoryLocks(pg.sql())).toBe(0);
  });

  it('lost to pg_terminate_backend is reopened and keeps every lease: no run changes hands', async () => {
    const a = pg.harness().store({ keepaliveMs: 50 });
    const b = pg.harness().store();
    const [l1, l2] = await claimAll(a, 'a', ['r1', 'r2']);
    const before = (await runRow('r1')).holder_session;
    const pid = await sessionPid('r1');
    await pg.sql()`select pg_terminate_backend(${pid!}::int, 5000)`;
    // Within a keepalive the store opens a new session and moves its runs to it, epochs unchanged.
    for (let i = 0; i < 100 && (await runRow('r1')).holder_session === before; i += 1)
      await sleep(20);
    expect((await runRow('r1')).holder_session).not.toBe(before);
    expect((await runRow('r2')).holder_session).toBe((await runRow('r1')).holder_session);
    await a.renew(l1!, long);
    await a.append(l1!, marks(1));
    await a.append(l2!, marks(1));
    expect(await b.claim!({ owner: 'b', ttlMs: long, limit: 10, definitions })).toEqual([]);
    expect(await b.acquire('r1', { owner: 'b', ttlMs: long })).toBeUndefined();
    expect(await runRow('r1')).toMatchObject({ epoch: l1!.epoch, owner: 'a', recoveries: 0 });
  });

  it('that only blipped keeps its run from an explicit claim too: no take-over, no recovery (issue 30)', async () => {
    // A slow keepalive leaves the window open: the holder has not noticed its lost session yet.
    const a = pg.harness().store({ keepaliveMs: 2_000 });
    const b = pg.harness().store({ takeoverGraceMs: 3_000 });
    const [lease] = await claimAll(a, 'a', ['r1']);
    const pid = await sessionPid('r1');
    await pg.sql()`select pg_terminate_backend(${pid!}::int, 5000)`;
    await sleep(50);
    // The path of `resume` and of a client's cancel: the batch claim's rule holds here too.
    expect(await b.acquire('r1', { owner: 'b', ttlMs: long })).toBeUndefined();
    expect(await runRow('r1')).toMatchObject({ epoch: 1, owner: 'a', recoveries: 0 });
    await a.renew(lease!, long);
    await a.append(lease!, marks(1));
  });

  it('of a crashed process is taken over by an explicit claim once the grace passed, counted as a recovery', async () => {
    const a = pg.harness().store();
    const b = pg.harness().store({ takeoverGraceMs: 300 });
    const [lease] = await claimAll(a, 'a', ['r1']);
    await a.close();
    expect(await b.acquire('r1', { owner: 'b', ttlMs: long })).toBeUndefined();
    await sleep(1_200);
    // The grace counts from when a probe first found the lock free: a server slow to end the closed
    // connection's backend (a loaded machine) starts it later, so the claim is retried until it passes.
    let taken: Lease | undefined;
    await expect
      .poll(async () => (taken ??= await b.acquire('r1', { owner: 'b', ttlMs: long })), {
        timeout: 10_000,
        interval: 100,
      })
      .toBeDefined();
    expect(taken).toMatchObject({ epoch: lease!.epoch + 1, recoveries: 1, takenFrom: 'a' });
  });

  it('of a crashed process lets another store take its runs over at once, each counted as a recovery', async () => {
    const a = pg.harness().store();
    const b = pg.harness().store({ takeoverGraceMs: 0 });
    const [l1] = await claimAll(a, 'a', ['r1', 'r2']);
    // Its session ends without any release, as a process that died.
    await a.close();
    const taken = await b.acquire('r1', { owner: 'b', ttlMs: long });
    expect(taken).toMatchObject({ epoch: l1!.epoch + 1, recoveries: 1 });
    const claimed = await b.claim!({ owner: 'b', ttlMs: long, limit: 10, definitions });
    expect(claimed.map((lease) => [lease.runId, lease.recoveries])).toEqual([['r2', 1]]);
  });

  it('with a grace of 0, is taken over by a claim right after one that found it alive', async () => {
    const a = pg.harness().store();
    const b = pg.harness().store({ takeoverGraceMs: 0 });
    const [lease] = await claimAll(a, 'a', ['r1']);
    // b looks while a lives: its probe finds a's session alive.
    expect(await b.acquire('r1', { owner: 'b', ttlMs: long })).toBeUndefined();
    await a.close();
    // Moments later a is gone: b's next claim looks again, not a second later.
    expect(await b.acquire('r1', { owner: 'b', ttlMs: long })).toMatchObject({
      epoch: lease!.epoch + 1,
      recoveries: 1,
      takenFrom: 'a',
    });
  });
});

describe('a holder frozen past its lease', () => {
  it('loses only that run, by the lease row: its session and other runs go on', async () => {
    const frozen = pg.harness().store();
    const claimer = pg.harness().store();
    const [lease] = await claimAll(frozen, 'frozen', ['r'], 1_000);
    const [other] = await claimAll(frozen, 'frozen', ['other']);
    await frozen.append(lease!, marks(1));
    expect(await claimer.acquire('r', { owner: 'claimer', ttlMs: long })).toBeUndefined();
    await sleep(1_100);
    const taken = await claimer.acquire('r', { owner: 'claimer', ttlMs: long });
    expect(taken).toMatchObject({ epoch: lease!.epoch + 1, recoveries: 1 });
    expect(taken?.claimed?.journal.map((entry) => entry.seq)).toEqual([1]);
    await frozen.renew(other!, long);
    await frozen.append(other!, marks(1));
    // The frozen process wakes up: every write and its heartbeat of the run it lost are refused.
    await expect(frozen.append(lease!, marks(2))).rejects.toBeInstanceOf(LeaseLostError);
    await expect(frozen.renew(lease!, long)).rejects.toBeInstanceOf(LeaseLostError);
    await claimer.append(taken!, marks(2));
    expect((await claimer.load('r'))?.journal.map((entry) => entry.seq)).toEqual([1, 2]);
  });
});

describe('a row locked by another session for longer than the lease', () => {
  it('fences that run only: the others renew and write meanwhile', async () => {
    const store = pg.harness().store();
    const ttlMs = 600;
    const leases = await claimAll(store, 'w', ['locked', 'free-1', 'free-2'], ttlMs);
    const schema = pg.harness().schema;
    // An operator looks at one run with SELECT ... FOR UPDATE and leaves the transaction open.
    let unlock!: () => void;
    const unlocked = new Promise<void>((resolve) => (unlock = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const operator = pg.sql().begin(async (tx) => {
      await tx.unsafe(`select 1 from "${schema}".runs where run_id = 'locked' for update`);
      locked();
      await unlocked;
    });
    await isLocked;
    const renewals = await Promise.allSettled(leases.map((lease) => store.renew(lease, ttlMs)));
    expect(renewals.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect((renewals[0] as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLostError);
    // Writes of the other runs go through, batched with the locked run's, which waits alone.
    const lockedWrite = store.append(leases[0]!, marks(1));
    await Promise.all(leases.slice(1).map((lease) => store.append(lease, marks(1))));
    for (const id of ['free-1', 'free-2']) {
      expect((await store.load(id))?.journal.map((entry) => entry.seq)).toEqual([1]);
    }
    unlock();
    await operator;
    await lockedWrite.catch(() => undefined);
  });
});

describe('batch claims', () => {
  it('hand racing workers disjoint runs, oldest first, and never a finished one', async () => {
    const seed = pg.harness().store();
    const ids = Array.from({ length: 30 }, (_, i) => `q-${String(i).padStart(2, '0')}`);
    for (const id of ids) await seed.create({ ...run(id), status: 'queued' });
    const done = (await seed.acquire('q-00', { owner: 'x', ttlMs: long }))!;
    await seed.save(done, {
      status: 'completed',
      signature: 's',
      snapshot: {},
      output: 1,
      journalSeq: 0,
      release: true,
    });
    await seed.release(done);
    const workers = [pg.harness().store(), pg.harness().store(), pg.harness().store()];
    const claims = await Promise.all(
      workers.map((store, i) =>
        store.claim!({ owner: `w${i}`, ttlMs: long, limit: 12, definitions }),
      ),
    );
    const claimed = claims.flat().map((lease) => lease.runId);
    expect(new Set(claimed).size).toBe(claimed.length);
    expect(claimed.sort()).toEqual(ids.slice(1));
    for (const lease of claims.flat()) {
      expect(lease.claimed?.run).toMatchObject({
        runId: lease.runId,
        owner: lease.owner,
        epoch: 1,
      });
    }
    expect((await seed.load('q-00'))?.run).toMatchObject({ status: 'completed', owner: null });
  });

  it('leave the runs of an instance that lost every session to it for the grace, after a failover', async () => {
    const a = pg.harness().store({ keepaliveMs: 50, takeoverGraceMs: 60_000 });
    const b = pg.harness().store({ keepaliveMs: 50, takeoverGraceMs: 60_000 });
    const leases = await claimAll(a, 'a', ['x1', 'x2']);
    // Every session goes at once, as in a failover.
    await pg.sql()`select pg_terminate_backend(l.pid, 5000) from pg_locks l
                   join pg_stat_activity s on s.pid = l.pid
                   where l.locktype = 'advisory' and s.datname = current_database()`;
    await sleep(300);
    // b's own session reopened just now: it takes no other instance's runs, and a moved its own back.
    expect(await b.claim!({ owner: 'b', ttlMs: long, limit: 10, definitions })).toEqual([]);
    for (const lease of leases) {
      await a.renew(lease, long);
      expect(await runRow(lease.runId)).toMatchObject({ owner: 'a', epoch: 1, recoveries: 0 });
    }
  });
});
