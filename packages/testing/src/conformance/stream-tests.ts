import { expect, it, type TestContext } from 'vitest';
import {
  CairnError,
  LeaseLostError,
  type DurableStore,
  type StreamChunk,
  type StreamPart,
  type StreamStore,
} from '@cairn/sdk';
import { checkpoint, longTtlMs, newRun, type ConformanceContext } from './context.js';

type Streaming = DurableStore & StreamStore;

/** Chunks of `unit` at these positions, each a text naming its position. */
export function textChunks(unit: string, from: number, count: number): StreamChunk[] {
  return Array.from({ length: count }, (_, i) => ({
    position: from + i,
    unit,
    part: { type: 'text', text: `token ${from + i} ` } satisfies StreamPart,
    at: 1_000 + from + i,
  }));
}

/** The store under test, or the test skipped when it keeps no streams (the contract lets a store not). */
async function streaming(ctx: ConformanceContext, t: TestContext): Promise<Streaming> {
  const store = await ctx.store();
  if (store.appendStream === undefined || store.readStream === undefined) t.skip();
  return store as Streaming;
}

const positions = (chunks: readonly StreamChunk[]) => chunks.map((chunk) => chunk.position);

/**
 * Registers the `StreamStore` half of the contract: positions that follow each other and never repeat, reads
 * from any position, appends fenced like every write.
 */
export function streamTests(ctx: ConformanceContext): void {
  it('numbers chunks 1, 2, ... and reads exactly the rest from every position', async (t) => {
    const store = await streaming(ctx, t);
    const init = newRun();
    await store.create(init);
    const lease = (await store.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    const written = [
      ...textChunks('trip-1', 1, 3),
      {
        position: 4,
        unit: 'trip-1',
        part: { type: 'tool-input-start', toolCallId: 'c-1', toolName: 'refund' },
        at: 5,
      },
      {
        position: 5,
        unit: 'trip-1',
        part: { type: 'tool-input', toolCallId: 'c-1', delta: '{"a":' },
        at: 6,
      },
      { position: 6, unit: 'trip-1', part: { type: 'reasoning', text: 'hmm' }, at: 7 },
      { position: 7, unit: 'trip-2', part: { type: 'superseded' }, at: 8 },
      {
        position: 8,
        unit: 'trip-1/tool-c-1',
        part: { type: 'tool-outcome', toolCallId: 'c-1', outcome: 'ok', output: { a: [1, null] } },
        at: 9,
      },
      {
        position: 9,
        unit: 'trip-1/tool-c-2',
        part: {
          type: 'tool-outcome',
          toolCallId: 'c-2',
          outcome: 'unknown',
          errorText: 'in flight',
        },
        at: 10,
      },
    ] satisfies StreamChunk[];
    await store.appendStream(lease, written.slice(0, 3));
    await store.appendStream(lease, written.slice(3));
    expect(await store.streamPosition!(init.runId)).toBe(9);
    for (let after = 0; after <= written.length; after += 1) {
      expect(await store.readStream(init.runId, { after })).toEqual(written.slice(after));
    }
    expect(await store.readStream(init.runId, { after: 2, limit: 3 })).toEqual(written.slice(2, 5));
    expect(await store.readStream(init.runId, { after: 99 })).toEqual([]);
    // Another instance reads the same.
    const other = (await ctx.store()) as Streaming;
    expect(await other.readStream(init.runId)).toEqual(written);
  });

  it('skips what a retried append already wrote, and refuses a gap or a malformed chunk, writing nothing', async (t) => {
    const store = await streaming(ctx, t);
    const init = newRun();
    await store.create(init);
    const lease = (await store.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    await store.appendStream(lease, textChunks('u', 1, 3));
    // The same append again (its first outcome was unknown), and one overlapping it: nothing twice.
    await store.appendStream(lease, textChunks('u', 1, 3));
    await store.appendStream(lease, textChunks('u', 2, 4));
    expect(positions(await store.readStream(init.runId))).toEqual([1, 2, 3, 4, 5]);
    const refused = async (chunks: StreamChunk[]) => {
      const error = await store.appendStream(lease, chunks).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(CairnError);
      expect((error as CairnError).code).toBe('INVALID_ARGUMENT');
    };
    await refused(textChunks('u', 7, 2));
    await refused([...textChunks('u', 6, 1), ...textChunks('u', 8, 1)]);
    await refused([
      { ...textChunks('u', 6, 1)[0]!, part: { type: 'shout' } as unknown as StreamPart },
    ]);
    await refused([{ ...textChunks('u', 6, 1)[0]!, unit: '' }]);
    const outcome = (part: Record<string, unknown>) => [
      { ...textChunks('u', 6, 1)[0]!, part: { type: 'tool-outcome', ...part } as StreamPart },
    ];
    await refused(outcome({ toolCallId: 'c', outcome: 'maybe' }));
    await refused(outcome({ outcome: 'ok' }));
    await refused(outcome({ toolCallId: 'c', outcome: 'ok', output: 'x'.repeat(70_000) }));
    expect(positions(await store.readStream(init.runId))).toEqual([1, 2, 3, 4, 5]);
    expect(await store.streamPosition!(init.runId)).toBe(5);
  });

  it('refuses the append of a holder that lost its lease, and of a run that ended, writing nothing', async (t) => {
    const store = await streaming(ctx, t);
    const { shortTtlMs } = ctx.harness();
    const other = (await ctx.store()) as Streaming;
    const init = newRun();
    await store.create(init);
    const first = (await store.acquire(init.runId, { owner: 'a', ttlMs: shortTtlMs }))!;
    await store.appendStream(first, textChunks('trip-1', 1, 2));
    await ctx.harness().expireLeases();
    const second = (await other.acquire(init.runId, { owner: 'b', ttlMs: longTtlMs }))!;
    // The old holder is fenced out, whatever positions it names.
    await expect(store.appendStream(first, textChunks('trip-1', 3, 2))).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    await expect(store.appendStream(first, textChunks('trip-1', 1, 2))).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    // The new holder goes on from the highest position, which never repeats.
    const highest = await other.streamPosition!(init.runId);
    expect(highest).toBe(2);
    const marker: StreamChunk = {
      position: 3,
      unit: 'trip-1',
      part: { type: 'superseded' },
      at: 9,
    };
    await other.appendStream(second, [marker, ...textChunks('trip-1', 4, 2)]);
    await expect(store.appendStream(first, textChunks('trip-1', 6, 1))).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    expect(positions(await store.readStream(init.runId))).toEqual([1, 2, 3, 4, 5]);
    await other.save(second, checkpoint(1, { status: 'completed', output: 'done' }));
    await expect(other.appendStream(second, textChunks('trip-1', 6, 1))).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    expect(await other.streamPosition!(init.runId)).toBe(5);
  });

  it('keeps one stream per run: unknown runs read empty, and a run deleted and created again starts over', async (t) => {
    const store = await streaming(ctx, t);
    expect(await store.readStream('no-such-run')).toEqual([]);
    expect(await store.streamPosition!('no-such-run')).toBe(0);
    const init = newRun();
    const neighbour = newRun();
    await store.create(init);
    await store.create(neighbour);
    const lease = (await store.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    const next = (await store.acquire(neighbour.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    await store.appendStream(lease, textChunks('u', 1, 4));
    await store.appendStream(next, textChunks('v', 1, 1));
    expect(positions(await store.readStream(neighbour.runId))).toEqual([1]);
    await store.save(lease, checkpoint(1, { status: 'completed', output: 'x', release: true }));
    await store.release(lease);
    expect(await store.delete(init.runId)).toBe(true);
    expect(await store.readStream(init.runId)).toEqual([]);
    await store.create(init);
    const again = (await store.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
    expect(await store.streamPosition!(init.runId)).toBe(0);
    await expect(store.appendStream(lease, textChunks('u', 1, 1))).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    await store.appendStream(again, textChunks('w', 1, 1));
    expect(await store.readStream(init.runId)).toEqual(textChunks('w', 1, 1));
    expect(positions(await store.readStream(neighbour.runId))).toEqual([1]);
  });

  it('keeps every run gap-free under concurrent appends of many runs, as a reader sees them', async (t) => {
    const store = await streaming(ctx, t);
    const reader = (await ctx.store()) as Streaming;
    const runs = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const init = newRun();
        await store.create(init);
        return (await store.acquire(init.runId, { owner: 'a', ttlMs: longTtlMs }))!;
      }),
    );
    const seenGaps: string[] = [];
    await Promise.all(
      runs.map(async (lease) => {
        for (let from = 1; from <= 40; from += 4) {
          await store.appendStream(lease, textChunks('trip-1', from, 4));
          // What a reader sees at any moment is a prefix: 1..n with no gap.
          const seen = positions(await reader.readStream(lease.runId));
          if (seen.some((position, i) => position !== i + 1) || seen.length < from + 3) {
            seenGaps.push(`${lease.runId}: ${seen.join(',')}`);
          }
        }
      }),
    );
    expect(seenGaps).toEqual([]);
    for (const lease of runs) {
      expect(positions(await reader.readStream(lease.runId))).toEqual(
        Array.from({ length: 40 }, (_, i) => i + 1),
      );
    }
  });
}
