import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { foldStream, type StreamChunk } from '@cairn/sdk';
import { createClient, type CairnClient } from '@cairn/worker';
import { describe, expect, it } from 'vitest';
import { pick, talkerAnswer, talkerAgent } from './fixtures/talking-agent.js';
import { sleep, useProcessBackends, type WorkerProcess } from './fixtures/process-backends.js';

// Streamed runs with real worker processes on real Postgres and Redis: every holder is SIGKILLed mid-stream and
// every reader drops its connection, and still each reader assembles exactly the run's answer.
const backends = useProcessBackends('cairn_streaming');
const talker = talkerAgent();
const runs = Number(process.env.CAIRN_STREAM_RUNS ?? 200);
/** Worker processes kept running: one that killed itself is replaced. */
const workerCount = 6;

/**
 * Reads a run's stream as a client would, dropping the connection at three positions the run picks and
 * coming back each time with the last position it saw.
 */
async function readWithDrops(client: CairnClient, runId: string): Promise<StreamChunk[]> {
  const drops = [1, 2, 3].map((i) => 1 + pick(`${runId}/drop-${i}`, 60)).sort((a, b) => a - b);
  const seen: StreamChunk[] = [];
  for (const dropAt of [...drops, Number.POSITIVE_INFINITY]) {
    const after = seen.at(-1)?.position ?? 0;
    for await (const chunk of client.stream(runId, { after, pollMs: 50 })) {
      seen.push(chunk);
      if (chunk.position >= dropAt) break; // the connection drops here
    }
  }
  return seen;
}

describe.each(['postgres', 'redis'] as const)(
  'streamed runs, with worker processes on %s',
  (name) => {
    it(`gives every reader exactly the answer of each of ${runs} runs whose holders were SIGKILLed mid-stream`, async () => {
      const backend = await backends.open(name);
      const client = createClient({ store: backend.store });
      const killDir = mkdtempSync(join(tmpdir(), 'cairn-kills-'));
      const workers: WorkerProcess[] = [];
      let started = 0;
      let stopping = false;
      const start = async () => {
        const worker = await backends.worker(`w-${(started += 1)}`, {
          STREAM: '1',
          KILL_DIR: killDir,
          CONCURRENCY: '10',
          // A holder dies with every run it holds, some of them between their streams.
          MAX_RECOVERIES: '1000',
        });
        workers.push(worker);
        // A worker that killed itself is replaced, as a supervisor would.
        void worker.exited.then(() => {
          if (!stopping) void start();
        });
      };
      try {
        await Promise.all(Array.from({ length: workerCount }, start));
        const ids = Array.from({ length: runs }, (_, i) => `talk-${i}`);
        await Promise.all(ids.map((runId) => client.start(talker, runId, { runId })));
        const read = await Promise.all(ids.map((runId) => readWithDrops(client, runId)));
        const outputs = await Promise.all(
          ids.map((runId) => client.result(runId, { pollMs: 100 })),
        );
        let superseded = 0;
        for (const [i, runId] of ids.entries()) {
          const chunks = read[i]!;
          // No duplicate and no missing position: 1, 2, ... n.
          expect(chunks.map((c) => c.position)).toEqual(chunks.map((_, at) => at + 1));
          expect(outputs[i]).toBe(talkerAnswer(runId));
          // What the reader assembles, superseded chunks dropped, is the stored answer.
          const fold = foldStream(chunks);
          expect(fold.text, runId).toBe(outputs[i]);
          // And what it read is the whole log.
          expect(chunks).toEqual(await backend.store.readStream!(runId, { limit: 10_000 }));
          superseded += fold.superseded.length;
        }
        const killed = workers.length - workerCount;
        console.log(
          `${name}: ${runs} runs streamed ${talkerAnswer('x').split(' ').length - 1} tokens each through ${killed} ` +
            `SIGKILLs; ${superseded} chunks written before a crash were superseded`,
        );
        expect(killed).toBeGreaterThan(0);
        // Every run's holder was killed while it streamed: its mark says so.
        expect(readdirSync(killDir).sort()).toEqual([...ids].sort());
        expect(superseded).toBeGreaterThan(0);
      } finally {
        stopping = true;
        rmSync(killDir, { recursive: true, force: true });
      }
    }, 600_000);

    it('appends nothing from a SIGSTOPped holder once it was taken over and SIGCONTed', async () => {
      const backend = await backends.open(name);
      const client = createClient({ store: backend.store });
      const frozen = await backends.worker('w-frozen', { STREAM: '1', LEASE_MS: '2000' });
      const ids = Array.from({ length: 10 }, (_, i) => `frozen-${i}`);
      await Promise.all(ids.map((runId) => client.start(talker, runId, { runId })));
      // Mid-stream: every run has written some of its answer.
      for (const runId of ids) {
        while ((await backend.store.streamPosition!(runId)) < 3) await sleep(20);
      }
      frozen.kill('SIGSTOP');
      const survivor = await backends.worker('w-survivor', { STREAM: '1', LEASE_MS: '2000' });
      const outputs = await Promise.all(ids.map((runId) => client.result(runId, { pollMs: 100 })));
      const logs = await Promise.all(
        ids.map((runId) => backend.store.readStream!(runId, { limit: 10_000 })),
      );
      frozen.kill('SIGCONT');
      await sleep(3_000); // the woken holder's model goes on talking; its appends are refused
      for (const [i, runId] of ids.entries()) {
        expect(outputs[i]).toBe(talkerAnswer(runId));
        expect(await backend.store.readStream!(runId, { limit: 10_000 })).toEqual(logs[i]);
        expect(foldStream(logs[i]!).text).toBe(outputs[i]);
      }
      expect(survivor.linesOf('event', 'completed').length).toBeGreaterThan(0);
    }, 120_000);
  },
);
