import { createClient } from '@cairn/worker';
import { describe, expect, it } from 'vitest';
import { sleep, useProcessBackends } from './fixtures/process-backends.js';
import { relayAgent } from './fixtures/waiting-agents.js';
import { runCairn } from './fixtures/run-cairn.js';

// Issue 31: one corrupted run harms one run, never a batch or a listing. Twenty healthy runs and three whose
// stored snapshot was changed behind the store's back are queued together for a real worker process.
const backends = useProcessBackends('cairn_corrupted_runs');
const relay = relayAgent(() => undefined);
const healthy = Array.from({ length: 20 }, (_, i) => `ok-${i}`);
const corrupted = ['bad-1', 'bad-2', 'bad-3'];

describe.each(['postgres', 'redis'] as const)(
  'corrupted runs among healthy ones, on %s',
  (name) => {
    it('completes every healthy run, reports each corrupted one once, never claims it in a loop, lists all 23', async () => {
      const backend = await backends.open(name);
      const client = createClient({ store: backend.store });
      for (const runId of [...corrupted, ...healthy]) await client.start(relay, 'go', { runId });
      await backend.corruptSnapshots(corrupted);

      const worker = await backends.worker('w-1');
      const results = await Promise.all(
        healthy.map((runId) => client.result(runId, { pollMs: 100, timeoutMs: 60_000 })),
      );
      expect(results).toEqual(healthy.map(() => 'relayed three times'));
      // Time for the worker to come back to them, were it to claim them in a loop.
      await sleep(3_000);
      const reports = worker
        .linesOf('event', 'skipped')
        .filter((event) => corrupted.includes(String(event.runId)));
      expect(reports.map((event) => [event.runId, event.code]).sort()).toEqual(
        corrupted.map((runId) => [runId, 'SNAPSHOT_INVALID']),
      );
      const claims = worker
        .linesOf('event', 'claimed')
        .filter((event) => corrupted.includes(String(event.runId)));
      expect(claims.length).toBeLessThanOrEqual(corrupted.length);
      // Never held: nobody owns them once the worker gave them back.
      for (const runId of corrupted) {
        const [run] = (await backend.store.list({ name: 'relay' })).filter(
          (r) => r.runId === runId,
        );
        expect(run?.owner ?? null).toBeNull();
      }

      const listed = await runCairn(['runs', 'list', '--json'], backend.env);
      expect(listed.code).toBe(0);
      const { runs } = JSON.parse(listed.stdout) as {
        runs: Array<{ runId: string; unreadable: string | null; status: string }>;
      };
      expect(runs).toHaveLength(23);
      expect(
        runs
          .filter((run) => run.unreadable !== null)
          .map((run) => run.runId)
          .sort(),
      ).toEqual(corrupted);
      expect(runs.filter((run) => run.status === 'completed')).toHaveLength(20);
    });
  },
);
