import { CairnError, LeaseLostError, type JournalEntry } from '@cairn/sdk';
import { startTcpProxy } from '@cairn/testing';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { advisoryLocks, sleep, usePgHarnessPerTest } from './support.js';

const pg = usePgHarnessPerTest('cairn_faults');

const long = 60_000;
const run = (runId: string) => ({
  runId,
  kind: 'agent',
  name: 'faults',
  signature: 's',
  snapshot: { step: 0 },
});
const marks = (...seqs: number[]): JournalEntry[] =>
  seqs.map((seq) => ({ seq, type: 'started', effectId: `e${seq}`, at: seq }));

async function holderPid(runId: string): Promise<number> {
  const rows = await pg
    .sql()
    .unsafe(`select holder_pid from "${pg.harness().schema}".runs where run_id = $1`, [runId]);
  return rows[0]!.holder_pid as number;
}

describe('the lock connection', () => {
  it('fences every run it held within one heartbeat when its backend is terminated', async () => {
    const a = pg.harness().store();
    const b = pg.harness().store();
    await a.create(run('r1'));
    await a.create(run('r2'));
    const l1 = (await a.acquire('r1', { owner: 'a', ttlMs: long }))!;
    const l2 = (await a.acquire('r2', { owner: 'a', ttlMs: long }))!;
    const pid = await holderPid('r1');
    expect(await holderPid('r2')).toBe(pid);

    await pg.sql()`select pg_terminate_backend(${pid}::int, 5000)`;

    // The next heartbeat of each run fails, and no write of theirs goes through any more.
    await expect(a.renew(l1, long)).rejects.toBeInstanceOf(LeaseLostError);
    await expect(a.renew(l2, long)).rejects.toBeInstanceOf(LeaseLostError);
    await expect(a.append(l1, marks(1))).rejects.toBeInstanceOf(LeaseLostError);
    await expect(
      a.save(l2, { status: 'running', signature: 's', snapshot: {}, journalSeq: 0 }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    // The holder's session is gone, so another worker takes over at once, without waiting for the lease.
    const taken = await b.acquire('r1', { owner: 'b', ttlMs: long });
    expect(taken?.epoch).toBe(l1.epoch + 1);
    // The store reserves a new lock connection and claims again through the normal path.
    const again = await a.acquire('r2', { owner: 'a', ttlMs: long });
    expect(again?.epoch).toBe(l2.epoch + 1);
    expect(await holderPid('r2')).not.toBe(pid);
    await a.append(again!, marks(1));
    await a.renew(again!, long);
  });

  it('lets a claimer take over a holder frozen past its lease by the lease row alone, fencing its next write', async () => {
    const frozen = pg.harness().store();
    const claimer = pg.harness().store();
    await frozen.create(run('r'));
    await frozen.create(run('other'));
    const lease = (await frozen.acquire('r', { owner: 'frozen', ttlMs: 300 }))!;
    const other = (await frozen.acquire('other', { owner: 'frozen', ttlMs: long }))!;
    await frozen.append(lease, marks(1));
    // While the lease is live the lock holds, whoever asks.
    expect(await claimer.acquire('r', { owner: 'claimer', ttlMs: long })).toBeUndefined();
    await sleep(400);
    const pid = await holderPid('r');
    const taken = await claimer.acquire('r', { owner: 'claimer', ttlMs: long });
    expect(taken?.epoch).toBe(lease.epoch + 1);
    // The frozen holder's session is never ended to take one run: its other runs go on.
    const alive = await pg.sql()`select 1 from pg_stat_activity where pid = ${pid}::int`;
    expect(alive).toHaveLength(1);
    await frozen.renew(other, long);
    await frozen.append(other, marks(1));

    // The frozen process wakes up: every write and its heartbeat are refused.
    await expect(frozen.append(lease, marks(2))).rejects.toBeInstanceOf(LeaseLostError);
    await expect(
      frozen.save(lease, {
        status: 'completed',
        signature: 's',
        snapshot: { stale: true },
        journalSeq: 0,
      }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    await expect(frozen.renew(lease, long)).rejects.toBeInstanceOf(LeaseLostError);
    await claimer.append(taken!, marks(2));
    const loaded = await claimer.load('r');
    expect(loaded?.journal.map((entry) => entry.seq)).toEqual([1, 2]);
    expect(loaded?.run).toMatchObject({
      owner: 'claimer',
      status: 'running',
      snapshot: { step: 0 },
    });
  });

  it('leaves no advisory lock behind after 1,000 claim and release cycles', async () => {
    const stores = [pg.harness().store(), pg.harness().store()];
    const ids = Array.from({ length: 10 }, (_, i) => `cycle-${i}`);
    for (const id of ids) await stores[0]!.create(run(id));
    // A run whose lease row is held by a live session that holds no lock: the claim takes the lock, the
    // epoch bump matches nothing, and the lock must be given back.
    await stores[0]!.create(run('ghost'));
    await pg.sql().unsafe(
      `update "${pg.harness().schema}".runs set owner = 'ghost', lease_until = now() + interval '1 hour',
         holder_pid = pg_backend_pid(),
         holder_backend_start = (select backend_start from pg_stat_activity where pid = pg_backend_pid())
       where run_id = 'ghost'`,
    );
    for (let cycle = 0; cycle < 1_000; cycle += 1) {
      const store = stores[cycle % 2]!;
      const other = stores[(cycle + 1) % 2]!;
      const id = ids[cycle % ids.length]!;
      const lease = await store.acquire(id, { owner: `o${cycle}`, ttlMs: long });
      expect(lease).toBeDefined();
      if (cycle % 50 === 0) {
        expect(await other.acquire(id, { owner: 'loser', ttlMs: long })).toBeUndefined();
        expect(await other.acquire('ghost', { owner: 'loser', ttlMs: long })).toBeUndefined();
        expect(await advisoryLocks(pg.sql())).toBe(1);
      }
      await store.release(lease!);
    }
    expect(await advisoryLocks(pg.sql())).toBe(0);
    const epochs = await pg
      .sql()
      .unsafe(`select sum(epoch)::int as n from "${pg.harness().schema}".runs`);
    expect(epochs[0]!.n).toBe(1_000);
  }, 120_000);
});

describe('an unreachable server', () => {
  it('fails with typed retryable errors, then recovers without losing acknowledged writes', async () => {
    const target = new URL(pg.database().url);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const via = new URL(pg.database().url);
    via.hostname = '127.0.0.1';
    via.port = String(proxy.port);
    const flaky = postgres(via.toString(), {
      max: 2,
      connect_timeout: 2,
      onnotice: () => undefined,
    });
    try {
      const store = pg.harness().store({ sql: flaky, lockTimeoutMs: 3_000 });
      await store.create(run('r'));
      const lease = (await store.acquire('r', { owner: 'w', ttlMs: long }))!;
      await store.append(lease, marks(1, 2));

      await proxy.cut();
      for (const attempt of [
        () => store.append(lease, marks(3, 4)),
        () => store.load('r'),
        () => store.create(run('other')),
      ]) {
        const error = await attempt().then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        expect(error).toBeInstanceOf(CairnError);
        expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', retryable: true });
      }
      // The lock connection died with the proxy: the heartbeat reports the lease lost.
      await expect(store.renew(lease, long)).rejects.toBeInstanceOf(LeaseLostError);

      await proxy.restore();
      // Fenced until claimed again, even though nobody else took the run.
      await expect(store.append(lease, marks(3, 4))).rejects.toBeInstanceOf(LeaseLostError);
      const again = (await store.acquire('r', { owner: 'w', ttlMs: long }))!;
      expect(again.epoch).toBe(lease.epoch + 1);
      // The write that failed is retried under the new lease, twice, as a retry after an unknown outcome.
      await store.append(again, marks(3, 4));
      await store.append(again, marks(3, 4));
      const loaded = await store.load('r');
      expect(loaded?.journal.map((entry) => entry.seq)).toEqual([1, 2, 3, 4]);
      await store.release(again);
    } finally {
      await flaky.end({ timeout: 1 });
      await proxy.close();
    }
  });

  it('reports a closed port as a retryable STORE_UNAVAILABLE', async () => {
    const closed = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
    const port = closed.port;
    await closed.close();
    const nowhere = postgres({ host: '127.0.0.1', port, connect_timeout: 2, max: 1 });
    try {
      const store = pg.harness().store({ sql: nowhere, lockTimeoutMs: 2_000 });
      await expect(store.load('r')).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
        retryable: true,
      });
      await expect(store.acquire('r', { owner: 'w', ttlMs: long })).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
        retryable: true,
      });
    } finally {
      await nowhere.end({ timeout: 1 });
    }
  });
});
