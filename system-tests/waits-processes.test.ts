import { agentSignals, toolArgsHash } from '@cairn/sdk';
import { createClient, type CairnClient } from '@cairn/worker';
import { describe, expect, it } from 'vitest';
import {
  sleep,
  useProcessBackends,
  type Backend,
  type WorkerProcess,
} from './fixtures/process-backends.js';
import { bigRefundArgs, refundAgent, sleeperAgent } from './fixtures/waiting-agents.js';

// Runs that wait, with real worker processes on real Postgres and Redis: nothing is held while they wait, and
// what arrives while no worker runs is delivered once one does.
const backends = useProcessBackends('cairn_worker_waits');
const noEffect = () => undefined;
const refunds = refundAgent(noEffect);
const sleeper = sleeperAgent();

const effects = (workers: readonly WorkerProcess[], runId: string, toolCallId: string) =>
  workers
    .flatMap((w) => w.lines)
    .filter((l) => l.kind === 'effect' && l.runId === runId && l.toolCallId === toolCallId).length;

describe.each(['postgres', 'redis'] as const)(
  'runs that wait, with worker processes on %s',
  (name) => {
    let client: CairnClient;
    let backend: Backend | undefined;
    const worker = backends.worker;
    const open = async () => {
      backend = await backends.open(name);
      client = createClient({ store: backend.store });
    };

    it('holds no lease, no lock and under 2 KB of worker memory per waiting run: 1,200 runs on one worker', async () => {
      await open();
      const w = await worker('w-mem', { CONCURRENCY: '50' });
      const startWaiting = async (from: number, count: number) => {
        for (let start = from; start < from + count; start += 100) {
          await Promise.all(
            Array.from({ length: Math.min(100, from + count - start) }, (_, i) =>
              client.start(refunds, 'refund', { runId: `m-${start + i}` }),
            ),
          );
        }
        while (w.linesOf('event', 'waiting').length < from + count) await sleep(200);
      };
      const heap = async () => {
        const seen = w.lines.filter((l) => l.kind === 'heap').length;
        process.kill(w.pid, 'SIGUSR2');
        while (w.lines.filter((l) => l.kind === 'heap').length === seen) await sleep(20);
        return Number(w.lines.filter((l) => l.kind === 'heap').at(-1)!.heapUsed);
      };
      // A first 200 warm the process up (code compiled on first use, pools, caches): what grows after them is what
      // each further waiting run costs.
      await startWaiting(0, 200);
      const before = await heap();
      const runs = 1_000;
      await startWaiting(200, runs);
      const after = await heap();
      const perRun = (after - before) / runs;
      console.log(
        `${name}: 1,000 runs waiting for approval on one worker: ${Math.round(perRun)} bytes of worker heap per run ` +
          `(after a full gc), ${await backend!.locks()} advisory locks`,
      );
      expect(perRun).toBeLessThan(2_048);
      const waiting = await backend!.store.list({ status: 'waiting' });
      expect(waiting).toHaveLength(200 + runs);
      expect(waiting.every((run) => run.owner === null && run.leaseUntil === null)).toBe(true);
      // The one lock a worker's store holds is its liveness lock (one per process, not per run); no run holds one.
      expect(await backend!.locks()).toBeLessThanOrEqual(1);
    });

    it('wakes every sleeping run after its worker was SIGKILLed and another started past their wake time', async () => {
      await open();
      const first = await worker('w-1');
      const ids = Array.from({ length: 20 }, (_, i) => `s-${i}`);
      await Promise.all(ids.map((runId) => client.start(sleeper, '2', { runId })));
      while (first.linesOf('event', 'waiting').length < ids.length) await sleep(50);
      first.kill('SIGKILL');
      await first.exited;
      await sleep(3_000); // past every wake time, with no worker running
      const second = await worker('w-2');
      const outputs = await Promise.all(ids.map((runId) => client.result(runId, { pollMs: 100 })));
      expect(outputs).toEqual(ids.map(() => 'awake'));
      // On a loaded machine the first sleepers may wake before the last one began to sleep: the first worker
      // completed those itself. Every run still asleep at the kill is woken by the second.
      const completedBy = (w: WorkerProcess) => w.linesOf('event', 'completed').map((e) => e.runId);
      const asleepAtKill = ids.filter((id) => !completedBy(first).includes(id));
      expect(asleepAtKill.length).toBeGreaterThan(ids.length / 2);
      // A result can be read before the line the worker printed with it: wait for the lines.
      await expect
        .poll(() => completedBy(second).sort(), { timeout: 10_000 })
        .toEqual(asleepAtKill.sort());
    });

    it('delivers an approval sent while no worker runs once one starts, and runs the call once', async () => {
      await open();
      const first = await worker('w-1');
      const { runId } = await client.start(refunds, 'refund', { runId: 'a-1' });
      await first.waitFor((l) => l.kind === 'event' && l.type === 'waiting' && l.runId === runId);
      first.kill('SIGTERM');
      await first.waitFor((l) => l.kind === 'exited');
      const [call] = (await client.get(runId))!.waitingFor!.approvals;
      await client.approve(runId, call!.callId, { argsHash: call!.argsHash, by: 'ana' });
      const second = await worker('w-2');
      expect(await client.result(runId, { pollMs: 100 })).toBe('handled');
      expect(effects([first, second], runId, 'refund-1')).toBe(1);
      expect(effects([first, second], runId, 'lookup-1')).toBe(1);
    });

    it('refuses a decision sent before the wait began, raw or through approve, and keeps nothing', async () => {
      await open();
      const { runId } = await client.start(refunds, 'refund', { runId: 'e-1' });
      // No worker took the run up yet: it does not wait for the call, and both paths say so alike.
      const early = {
        callId: 'refund-1',
        approved: true,
        argsHash: toolArgsHash(bigRefundArgs),
      };
      for (const send of [
        () => client.signal(runId, agentSignals.approval, early),
        () => client.approve(runId, early.callId, { argsHash: early.argsHash }),
      ]) {
        await expect(send()).rejects.toMatchObject({
          code: 'INVALID_ARGUMENT',
          data: { reason: 'not waiting' },
        });
      }
      expect(await backend!.store.mailbox(runId)).toEqual([]);
      const w = await worker('w-1');
      await w.waitFor((l) => l.kind === 'event' && l.type === 'waiting' && l.runId === runId);
      await client.approve(runId, early.callId, { argsHash: early.argsHash });
      expect(await client.result(runId, { pollMs: 100 })).toBe('handled');
      expect(effects([w], runId, 'refund-1')).toBe(1);
    });

    it('acts once on two approvals of one call sent at once from two clients', async () => {
      await open();
      const w = await worker('w-1');
      const { runId } = await client.start(refunds, 'refund', { runId: 'd-1' });
      await w.waitFor((l) => l.kind === 'event' && l.type === 'waiting' && l.runId === runId);
      const [call] = (await client.get(runId))!.waitingFor!.approvals;
      const other = createClient({ store: backend!.store });
      const receipts = await Promise.all(
        [client, other].map((c) =>
          c.approve(runId, call!.callId, { argsHash: call!.argsHash, by: 'ana' }),
        ),
      );
      expect(receipts.filter((r) => r.duplicate)).toHaveLength(1);
      expect(await client.result(runId, { pollMs: 100 })).toBe('handled');
      expect(effects([w], runId, 'refund-1')).toBe(1);
    });
  },
);
