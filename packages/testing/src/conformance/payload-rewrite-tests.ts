import { expect, it, type TestContext } from 'vitest';
import {
  CairnError,
  type DurableStore,
  type JsonValue,
  type Lease,
  type StreamChunk,
} from '@cairn/sdk';
import { checkpoint, longTtlMs, newRun, type ConformanceContext } from './context.js';

/** A string as an encoded payload looks: long, printable, with base64's `/` and `+` (which some JSON escapes). */
const payload = (label: string) => `cairn:1:test@k1:${label}/${'A+/'.repeat(14)}==`;
const moved = (label: string) => `cairn:1:test@k2:${label}/${'B/+'.repeat(15)}=`;
const hash = (n: number) => n.toString(16).padStart(64, '0');

/** The store, skipping the test when it does not offer the two operations. */
async function rewritingStore(
  ctx: ConformanceContext,
  t: TestContext,
): Promise<DurableStore & Required<Pick<DurableStore, 'signalPayloads' | 'replacePayloads'>>> {
  const store = await ctx.store();
  if (store.signalPayloads === undefined || store.replacePayloads === undefined) t.skip();
  return store as never;
}

/** A snapshot whose conversation is long enough for a store to keep it apart (store-pg's snapshot chunks). */
function snapshotWith(labels: string[]): JsonValue {
  return {
    state: { note: payload(labels[0]!) },
    messages: labels.slice(1).map((label, i) => ({ role: 'user', content: payload(label), i })),
    padding: 'x'.repeat(2_000),
  };
}

/** A run holding payloads in every place a store keeps them; its lease and every label it holds. */
async function runWithPayloadsEverywhere(store: DurableStore): Promise<{
  runId: string;
  lease: Lease;
  labels: string[];
}> {
  const messages = Array.from({ length: 30 }, (_, i) => `message${i}`);
  const init = newRun({ snapshot: snapshotWith(['state0', ...messages]) });
  await store.create(init);
  const lease = (await store.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
  await store.save(lease, checkpoint(1, { snapshot: snapshotWith(['state1', ...messages]) }));
  await store.append(lease, [
    { seq: 1, type: 'started', effectId: 'tool-1', at: 1 },
    {
      seq: 2,
      type: 'settled',
      effectId: 'tool-1',
      at: 2,
      outcome: { status: 'ok', value: payload('result') },
    },
    {
      seq: 3,
      type: 'settled',
      effectId: 'tool-2',
      at: 3,
      outcome: {
        status: 'error',
        error: {
          name: 'Error',
          code: 'TOOL_FAILED',
          message: payload('toolError'),
          retryable: false,
        },
      },
    },
  ]);
  await store.signal(init.runId, { name: 'note', payload: { text: payload('consumed') } });
  // A checkpoint consumes the first signal (the second stays in the mailbox) and keeps journal entries 2 and 3.
  await store.save(
    lease,
    checkpoint(2, {
      snapshot: snapshotWith(['state2', ...messages]),
      journalSeq: 1,
      signalsConsumed: 1,
    }),
  );
  await store.signal(init.runId, { name: 'note', payload: { text: payload('unconsumed') } });
  const labels = ['state2', ...messages, 'result', 'toolError', 'consumed', 'unconsumed'];
  if (store.appendStream !== undefined) {
    const chunks: StreamChunk[] = [
      { position: 1, unit: 'trip-1', at: 5, part: { type: 'text', text: payload('chunk') } },
    ];
    await store.appendStream(lease, chunks);
    labels.push('chunk');
  }
  // It ends waiting for a decision, which a client then sends: the wait and the decision hold payloads too.
  await store.save(lease, {
    ...checkpoint(3, { snapshot: snapshotWith(['state3', ...messages]), journalSeq: 1 }),
    status: 'waiting',
    release: true,
    wait: {
      until: null,
      signals: ['cairn.approval'],
      detail: {
        note: payload('waitDetail'),
        approvals: [
          { callId: 'call-1', tool: 'refund', args: {}, argsHash: hash(1), deadline: null },
        ],
      },
    },
  });
  labels[0] = 'state3';
  labels.push('waitDetail');
  await store.signal(init.runId, {
    name: 'cairn.approval',
    payload: { callId: 'call-1', approved: true, argsHash: hash(1), by: payload('decidedBy') },
  });
  labels.push('decidedBy');
  return { runId: init.runId, lease, labels };
}

/** Every string a run's rows show, as `load`, `mailbox`, `readStream` and `signalPayloads` read them. */
async function everythingStored(store: DurableStore, runId: string): Promise<string> {
  return JSON.stringify([
    await store.load(runId),
    await store.mailbox(runId),
    store.readStream === undefined ? [] : await store.readStream(runId),
    await store.signalPayloads!(runId),
  ]);
}

/** Tests of `signalPayloads` and `replacePayloads`, for stores that offer them. */
export function payloadRewriteTests(ctx: ConformanceContext): void {
  it('signalPayloads returns the mailbox and the standing decisions (and consumed signals a store keeps)', async (t) => {
    const store = await rewritingStore(ctx, t);
    const { runId } = await runWithPayloadsEverywhere(store);
    const kept = await store.signalPayloads(runId);
    const texts = JSON.stringify(kept);
    // A store may drop a consumed signal's payload (store-redis does); what it keeps, it returns.
    for (const label of ['unconsumed', 'decidedBy']) expect(texts).toContain(payload(label));
    expect(kept.some((signal) => signal.name === 'cairn.approval')).toBe(true);
    expect(await store.signalPayloads('run-that-never-was')).toEqual([]);
  });

  it('replacePayloads replaces a string everywhere the run keeps it, and nothing else', async (t) => {
    const store = await rewritingStore(ctx, t);
    const { runId, labels } = await runWithPayloadsEverywhere(store);
    const before = await store.load(runId);
    // Every label is stored but a consumed signal's, which a store may drop once a checkpoint consumed it.
    const storedBefore = await everythingStored(store, runId);
    const kept = labels.filter((label) => storedBefore.includes(payload(label)));
    expect(labels.filter((label) => !kept.includes(label))).toEqual(
      kept.includes('consumed') ? [] : ['consumed'],
    );
    const replacements = new Map(labels.map((label) => [payload(label), moved(label)]));
    expect(await store.replacePayloads(runId, before!.run.incarnation, replacements)).toBe(
      kept.length,
    );
    const after = await everythingStored(store, runId);
    for (const label of kept) {
      expect(after, label).not.toContain(payload(label));
      expect(after, label).toContain(moved(label));
    }
    // What is not a payload is as it was.
    const loaded = (await store.load(runId))!;
    expect(loaded.run).toMatchObject({
      status: 'waiting',
      epoch: before!.run.epoch,
      signature: 'sig-1',
    });
    expect(loaded.journal.map((entry) => entry.seq)).toEqual(
      before!.journal.map((entry) => entry.seq),
    );
    expect((loaded.run.snapshot as { padding: string }).padding).toBe('x'.repeat(2_000));
    // A second pass finds nothing left to replace.
    expect(await store.replacePayloads(runId, before!.run.incarnation, replacements)).toBe(0);
  });

  it('replacePayloads leaves a string a holder wrote over alone, and the holder goes on', async (t) => {
    const store = await rewritingStore(ctx, t);
    const init = newRun({ snapshot: { note: payload('first') } });
    await store.create(init);
    const lease = (await store.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    await store.save(lease, checkpoint(1, { snapshot: { note: payload('second') } }));
    const replaced = await store.replacePayloads(
      init.runId,
      lease.incarnation,
      new Map([[payload('first'), moved('first')]]),
    );
    expect(replaced).toBe(0);
    await store.save(lease, checkpoint(2, { snapshot: { note: payload('third') } }));
    expect((await store.load(init.runId))!.run.snapshot).toEqual({ note: payload('third') });
  });

  it('replacePayloads rewrites an ended run, and changes nothing of another incarnation or an unknown run', async (t) => {
    const store = await rewritingStore(ctx, t);
    const init = newRun();
    await store.create(init);
    const lease = (await store.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    await store.save(lease, {
      ...checkpoint(1, { snapshot: { note: payload('end') } }),
      status: 'completed',
      output: { answer: payload('output') },
      release: true,
    });
    const replacements = new Map([
      [payload('end'), moved('end')],
      [payload('output'), moved('output')],
    ]);
    expect(await store.replacePayloads(init.runId, `${lease.incarnation}0`, replacements)).toBe(0);
    expect(await store.replacePayloads('run-that-never-was', lease.incarnation, replacements)).toBe(
      0,
    );
    expect((await store.load(init.runId))!.run.output).toEqual({ answer: payload('output') });
    expect(await store.replacePayloads(init.runId, lease.incarnation, replacements)).toBe(2);
    const ended = (await store.load(init.runId))!.run;
    expect(ended).toMatchObject({ status: 'completed', output: { answer: moved('output') } });
    expect(ended.snapshot).toEqual({ note: moved('end') });
  });

  it('replacePayloads refuses strings it could not replace exactly', async (t) => {
    const store = await rewritingStore(ctx, t);
    const init = newRun();
    await store.create(init);
    const { incarnation } = (await store.load(init.runId))!.run;
    for (const bad of [
      new Map([['short', moved('x')]]),
      new Map([[`${payload('x')}"`, moved('x')]]),
      new Map([[payload('x'), `${moved('x')}\\`]]),
      new Map([[` ${payload('x')}`, moved('x')]]),
    ]) {
      const refused = await store
        .replacePayloads(init.runId, incarnation, bad)
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(CairnError);
      expect((refused as CairnError).code).toBe('INVALID_ARGUMENT');
    }
  });
}

/** Tests of `list` read a page at a time (`RunFilter.after`). */
export function listPagingTests(ctx: ConformanceContext): void {
  it('list pages with after: every run once, in creation order', async () => {
    const store = await ctx.store();
    const ids: string[] = [];
    for (let i = 0; i < 7; i += 1) {
      const init = newRun({ name: 'paged' });
      await store.create(init);
      ids.push(init.runId);
    }
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await store.list({
        name: 'paged',
        limit: 3,
        ...(after === undefined ? {} : { after }),
      });
      if (page.length === 0) break;
      seen.push(...page.map((run) => run.runId));
      after = page.at(-1)!.runId;
    }
    expect(seen).toEqual(ids);
    expect(await store.list({ name: 'paged', after: ids[6]! })).toEqual([]);
  });

  it('list after a run that is not stored is RUN_NOT_FOUND', async () => {
    const store = await ctx.store();
    const refused = await store.list({ after: 'run-that-never-was' }).catch((e: unknown) => e);
    expect((refused as CairnError).code).toBe('RUN_NOT_FOUND');
  });
}
