import { CairnError, LeaseLostError, type JournalEntry } from '@cairn/sdk';
import { startTcpProxy } from '@cairn/testing';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { usePgHarnessPerTest } from './support.js';

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
      // A renewal that cannot be confirmed within a third of the lease (tried again until then) is a lost
      // lease.
      await expect(store.renew(lease, 3_000)).rejects.toBeInstanceOf(LeaseLostError);

      await proxy.restore();
      // Nobody took the run meanwhile: the lease still holds once the server answers again, and the write
      // that failed is retried under it, twice, as a retry after an unknown outcome.
      await store.append(lease, marks(3, 4));
      await store.append(lease, marks(3, 4));
      await store.renew(lease, long);
      const loaded = await store.load('r');
      expect(loaded?.journal.map((entry) => entry.seq)).toEqual([1, 2, 3, 4]);
      expect(loaded?.run).toMatchObject({ epoch: lease.epoch, recoveries: 0 });
      await store.release(lease);
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
