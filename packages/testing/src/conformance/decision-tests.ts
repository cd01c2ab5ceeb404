import { expect, it } from 'vitest';
import {
  CairnError,
  type DurableStore,
  type JsonObject,
  type Lease,
  type RunWait,
} from '@cairn/sdk';
import { checkpoint, longTtlMs, newRun, settleAll, type ConformanceContext } from './context.js';

const definitions = [{ kind: 'agent', name: 'conformance' }];
const hash = (n: number) => n.toString(16).padStart(64, '0');
const H1 = hash(1);
const H2 = hash(2);

/** The wait of a run holding `calls` for a decision, as an agent writes it. */
function waitingFor(...calls: Array<[callId: string, argsHash: string]>): RunWait {
  return {
    until: null,
    signals: ['cairn.approval', 'cairn.steer'],
    detail: {
      approvals: calls.map(([callId, argsHash]) => ({
        callId,
        tool: 'refund',
        args: { order: callId },
        argsHash,
        deadline: null,
      })),
    },
  };
}

/** A run that waits for decisions on `calls`, holding nothing; the lease it was written under. */
async function waitingRun(
  store: DurableStore,
  ...calls: Array<[callId: string, argsHash: string]>
): Promise<Lease> {
  const init = newRun();
  await store.create(init);
  const lease = (await store.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
  await store.save(
    lease,
    checkpoint(1, { status: 'waiting', wait: waitingFor(...calls), release: true }),
  );
  return lease;
}

const decision = (payload: JsonObject) => ({ name: 'cairn.approval', payload });

function refusal(error: unknown): unknown {
  return error instanceof CairnError ? { code: error.code, reason: error.data.reason } : error;
}

/**
 * Registers the decision rules (`decisions.ts` in the sdk): a decision on a held call is accepted only while the
 * run's stored wait lists that call, checked in the step that keeps it; an approval only for the arguments it
 * waits with; a call's first decision stands and answers every repeat, whenever it comes.
 */
export function decisionTests(ctx: ConformanceContext): void {
  it('accepts a decision only while the run waits for that call, with those arguments, and wakes it', async () => {
    const a = await ctx.store();
    const b = await ctx.store();
    const init = newRun();
    await a.create(init);
    // Not waiting (queued): refused, nothing kept.
    await expect(
      b.signal(init.runId, decision({ callId: 'c1', approved: true, argsHash: H1 })),
    ).rejects.toSatisfy((e) => JSON.stringify(refusal(e)).includes('not waiting'));
    const lease = (await a.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    await a.save(
      lease,
      checkpoint(1, { status: 'waiting', wait: waitingFor(['c1', H1]), release: true }),
    );
    expect(await b.claimable({ limit: 10, definitions })).toEqual([]);

    // Other arguments, an unknown call, a payload that is not a decision: refused, and nothing kept.
    const other = await b
      .signal(init.runId, decision({ callId: 'c1', approved: true, argsHash: H2 }))
      .catch((e: unknown) => e);
    expect(refusal(other)).toEqual({ code: 'INVALID_ARGUMENT', reason: 'other arguments' });
    expect((other as CairnError).data.argsHash).toBe(H1);
    await expect(
      b.signal(init.runId, decision({ callId: 'c9', approved: true, argsHash: H1 })),
    ).rejects.toSatisfy((e) => JSON.stringify(refusal(e)).includes('not waiting'));
    await expect(b.signal(init.runId, decision({ callId: 'c1' }))).rejects.toSatisfy(
      (e) => e instanceof CairnError && e.code === 'INVALID_ARGUMENT',
    );
    expect(await b.mailbox(init.runId)).toEqual([]);

    // The right arguments, after a wrong try (which burnt nothing): accepted, and the run is due.
    const receipt = await b.signal(init.runId, {
      ...decision({ callId: 'c1', approved: true, argsHash: H1, by: 'ana' }),
      idempotencyKey: 'the sender’s own key, which a decision does not use',
    });
    expect(receipt).toEqual({
      seq: 1,
      duplicate: false,
      decision: { callId: 'c1', approved: true, argsHash: H1, by: 'ana' },
    });
    expect(await b.claimable({ limit: 10, definitions })).toEqual([init.runId]);
    const [kept] = await a.mailbox(init.runId);
    expect(kept).toMatchObject({ seq: 1, name: 'cairn.approval', payload: receipt.decision });
  });

  it('lets the first decision on a call stand, answering every repeat with it, even after the run ended', async () => {
    const a = await ctx.store();
    const b = await ctx.store();
    const lease = await waitingRun(a, ['c1', H1], ['c2', H2]);
    // A rejection names no arguments: it is about those the call waits with.
    const rejected = await a.signal(
      lease.runId,
      decision({ callId: 'c1', approved: false, reason: 'no' }),
    );
    const standing = { callId: 'c1', approved: false, argsHash: H1, reason: 'no' };
    expect(rejected).toEqual({ seq: 1, duplicate: false, decision: standing });
    // Approving it afterwards answers the rejection.
    expect(
      await b.signal(lease.runId, decision({ callId: 'c1', approved: true, argsHash: H1 })),
    ).toEqual({ seq: 1, duplicate: true, decision: standing });
    expect(await b.mailbox(lease.runId)).toHaveLength(1);

    // Consumed, the run moved on and ended: a retried webhook still gets the same answer.
    const next = (await a.acquire(lease.runId, { owner: 'b', ttlMs: longTtlMs }))!;
    await a.save(next, checkpoint(2, { signalsConsumed: 1 }));
    await expect(
      b.signal(lease.runId, decision({ callId: 'c2', approved: true, argsHash: H2 })),
    ).rejects.toSatisfy((e) => JSON.stringify(refusal(e)).includes('not waiting'));
    await a.save(next, checkpoint(3, { status: 'completed', output: 'done', release: true }));
    expect(await b.signal(lease.runId, decision({ callId: 'c1', approved: false }))).toEqual({
      seq: 1,
      duplicate: true,
      decision: standing,
    });
    expect(
      await b.signal(lease.runId, decision({ callId: 'c1', approved: true, argsHash: H1 })),
    ).toEqual({ seq: 1, duplicate: true, decision: standing });
    // A call never decided, on a run that ended: the run's end.
    await expect(
      b.signal(lease.runId, decision({ callId: 'c2', approved: true, argsHash: H2 })),
    ).rejects.toSatisfy((e) => e instanceof CairnError && e.code === 'RUN_ENDED');
  });

  it('decides a call held again with other arguments anew, and answers the old decision to its repeats', async () => {
    const a = await ctx.store();
    const lease = await waitingRun(a, ['node-1', H1]);
    await a.signal(
      lease.runId,
      decision({ callId: 'node-1', approved: false, reason: 'too much' }),
    );
    // Replanned: the node id is reused with other input, and the run waits for it again.
    const next = (await a.acquire(lease.runId, { owner: 'b', ttlMs: longTtlMs }))!;
    await a.save(
      next,
      checkpoint(2, {
        status: 'waiting',
        wait: waitingFor(['node-1', H2]),
        release: true,
        signalsConsumed: 1,
      }),
    );
    expect(
      await a.signal(lease.runId, decision({ callId: 'node-1', approved: true, argsHash: H2 })),
    ).toMatchObject({ seq: 2, duplicate: false, decision: { approved: true, argsHash: H2 } });
    expect(
      await a.signal(
        lease.runId,
        decision({ callId: 'node-1', approved: false, argsHash: H1, reason: 'retried' }),
      ),
    ).toMatchObject({ seq: 1, duplicate: true, decision: { approved: false, reason: 'too much' } });
  });

  it('accepts one of many decisions on a call sent at once, and answers it to all the others', async () => {
    const a = await ctx.store();
    const b = await ctx.store();
    const lease = await waitingRun(a, ['c1', H1]);
    const sends = Array.from({ length: 12 }, (_, i) =>
      (i % 2 === 0 ? a : b).signal(
        lease.runId,
        decision(
          i % 3 === 0
            ? { callId: 'c1', approved: false, by: `person-${i}` }
            : { callId: 'c1', approved: true, argsHash: H1, by: `person-${i}` },
        ),
      ),
    );
    const results = await settleAll(sends);
    const receipts = results.map((r) => (r.status === 'fulfilled' ? r.value : r.reason));
    const accepted = receipts.filter((r) => r.duplicate === false);
    expect(accepted).toHaveLength(1);
    expect(receipts.every((r) => r.seq === 1)).toBe(true);
    for (const receipt of receipts) expect(receipt.decision).toEqual(accepted[0].decision);
    expect(await a.mailbox(lease.runId)).toHaveLength(1);
  });

  it('leaves signals of every other name as they were: kept whatever the run waits for', async () => {
    const a = await ctx.store();
    const lease = await waitingRun(a, ['c1', H1]);
    expect(
      await a.signal(lease.runId, { name: 'cairn.steer', payload: { content: 'stop' } }),
    ).toEqual({ seq: 1, duplicate: false });
    expect(
      await a.signal(lease.runId, { name: 'billing.note', payload: { callId: 'c1' } }),
    ).toEqual({ seq: 2, duplicate: false });
  });
}
