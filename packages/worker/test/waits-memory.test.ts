import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { memoryStore } from '@cairn/sdk';
import { createFakeClock } from '@cairn/testing';
import { createClient, createWorker } from '@cairn/worker';
import { describe, expect, it } from 'vitest';
import { refundAgent, until } from './support.js';

const runs = 1_000;

/** A full collection before each reading: `global.gc` under --expose-gc, else switched on here. */
function collector(): { gc: () => void; source: string } {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed !== undefined) return { gc: exposed, source: '--expose-gc' };
  setFlagsFromString('--expose-gc');
  return { gc: runInNewContext('gc') as () => void, source: 'v8.setFlagsFromString' };
}

function heapUsed(gc: () => void): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

describe('a worker with many waiting runs (a measurement, not timed)', () => {
  it(`holds none of ${runs} waiting runs, and keeps next to nothing of them`, async () => {
    const { gc, source } = collector();
    const clock = createFakeClock();
    const store = memoryStore({ clock });
    const client = createClient({ store });
    const { agent } = refundAgent(store, clock, { recordCalls: false });
    let waiting = 0;
    let worker: ReturnType<typeof createWorker> | undefined = createWorker({
      store,
      agents: [agent],
      clock,
      concurrency: 50,
      pollMs: 1_000,
      shutdownSignals: [],
      onEvent: (event) => {
        if (event.type === 'waiting') waiting += 1;
      },
    });
    await worker.start();
    const before = heapUsed(gc);

    for (let i = 0; i < runs; i += 1) await client.start(agent, `Refund order ${i}`);
    await until(() => waiting === runs && worker!.active().length === 0);

    const listed = await client.list({ status: 'waiting' });
    expect(listed).toHaveLength(runs);
    expect(listed.filter((run) => run.owner !== null || run.held)).toEqual([]);
    expect(listed.every((run) => run.waitingFor?.approvals.length === 1)).toBe(true);
    expect(worker.active()).toHaveLength(0);
    listed.length = 0;

    const withRuns = heapUsed(gc);
    await worker.close();
    worker = undefined;
    const storeOnly = heapUsed(gc);
    const perRun = (bytes: number) => Math.round(bytes / runs);
    console.log(
      `${runs} waiting runs (heap measured after a full gc, ${source}): ` +
        `process (memory store and worker) +${perRun(withRuns - before)} bytes per run; ` +
        `the worker's share (freed when it closed) ${perRun(withRuns - storeOnly)} bytes per run`,
    );
    expect((await store.list({ status: 'waiting' })).length).toBe(runs);
  }, 120_000);
});
