import {
  CairnError,
  defineAgent,
  defineTool,
  isCairnError,
  type DurableStore,
  type JournalEntry,
  type JsonValue,
  type StoredRun,
} from '@cairn/sdk';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { SimulatedCrash } from '../crash-harness.js';
import { scriptedModel } from '../scripted-model.js';
import { longTtlMs, newRun, type ConformanceContext } from './context.js';

type Snapshot = { [key: string]: JsonValue };

/** What a corruption does to a run stopped at the start of its second trip: its snapshot, its journal. */
interface Corruption {
  name: string;
  snapshot?(snapshot: Snapshot): Snapshot;
  /** Entries appended to the journal; `next` is the first seq free, `pending` the effect the run waits for. */
  journal?(next: number, pending: string): JsonValue[];
}

/** A pending call of `tool` in the run's first trip, as the runtime stores one. */
const toolCall = (tool: string, toolCallId: string, args: JsonValue): JsonValue => ({
  type: 'perform',
  id: `trip-0/tool/${toolCallId}`,
  effect: { kind: 'tool', tool, toolCallId, args, trip: 0 },
  idempotent: false,
});

const pendingId = (snapshot: Snapshot): string =>
  ((snapshot.pending as Array<{ id: string }> | null)?.[0]?.id ?? 'none') as string;

/** Every corruption DESIGN.md's loading rule must catch before anything runs (issue 16, point 4). */
const corruptions: Corruption[] = [
  { name: 'carried holds null', snapshot: (s) => ({ ...s, carried: [null] }) },
  {
    name: 'carried holds an entry of an unknown type',
    snapshot: (s) => ({
      ...s,
      carried: [{ seq: 1, type: 'rumoured', effectId: pendingId(s), at: 0 }],
    }),
  },
  {
    name: 'carried holds an entry after the checkpoint’s journalSeq',
    snapshot: (s) => ({
      ...s,
      carried: [
        { seq: (s.journalSeq as number) + 5, type: 'started', effectId: pendingId(s), at: 0 },
      ],
    }),
  },
  { name: 'journalSeq is negative', snapshot: (s) => ({ ...s, journalSeq: -50 }) },
  { name: 'journalSeq is not an integer', snapshot: (s) => ({ ...s, journalSeq: 2.5 }) },
  {
    name: 'a pending effect is of a kind the definition never commands',
    snapshot: (s) => ({
      ...s,
      pending: (s.pending as Array<{ [key: string]: JsonValue }>).map((command) => ({
        ...command,
        effect: { kind: 'teleport' },
      })),
    }),
  },
  {
    name: 'two pending effects share an id',
    snapshot: (s) => ({
      ...s,
      pending: [...(s.pending as JsonValue[]), ...(s.pending as JsonValue[])],
    }),
  },
  {
    name: 'the state has a hole in its messages',
    snapshot: (s) => {
      const state = s.state as { messages: JsonValue[] };
      return { ...s, state: { ...state, messages: [state.messages[0]!, null] } };
    },
  },
  {
    name: 'a pending tool call has arguments its tool cannot take',
    snapshot: (s) => ({ ...s, pending: [toolCall('refund', 'c9', { id: 7 })] }),
  },
  {
    name: 'a pending tool call names a tool the agent does not have',
    snapshot: (s) => ({ ...s, pending: [toolCall('wire_money', 'c9', { order: 'r9' })] }),
  },
  {
    name: 'a pending tool call is not one the conversation’s last answer asked for',
    snapshot: (s) => ({ ...s, pending: [toolCall('refund', 'c-ghost', { order: 'r1' })] }),
  },
  {
    name: 'snapshot names a journalSeq below the one its checkpoint was written with',
    snapshot: (s) => ({ ...s, journalSeq: 1 }),
  },
  {
    name: 'conversation was cut to its first three messages, its recorded length rewritten to match',
    snapshot: (s) => {
      const state = s.state as { messages: JsonValue[]; trips: number };
      // A second trip settled too, so the conversation has more to lose.
      return { ...s, state: { ...state, trips: 2, messages: state.messages.slice(0, 2) } };
    },
  },
  {
    name: 'a journal row is of an unknown type',
    journal: (seq, effectId) => [{ seq, type: 'rumoured', effectId, at: 0 }],
  },
  {
    name: 'a settled journal row has no outcome',
    journal: (seq, effectId) => [{ seq, type: 'settled', effectId, at: 0 }],
  },
  {
    name: 'a settled journal row has an outcome of an unknown status',
    journal: (seq, effectId) => [
      { seq, type: 'settled', effectId, at: 0, outcome: { status: 'maybe' } },
    ],
  },
  {
    name: 'a journaled model answer is not a model answer',
    journal: (seq, effectId) => [
      { seq, type: 'settled', effectId, at: 0, outcome: { status: 'ok', value: { shrug: true } } },
    ],
  },
];

/**
 * A stored run whose checkpoint or journal was corrupted (by hand, by a bug, by a bad restore) is refused with
 * `SNAPSHOT_INVALID` before anything runs: no tool runs again, and its rows are left as they are.
 */
export function corruptionTests(ctx: ConformanceContext): void {
  for (const corruption of corruptions) {
    it(`refuses to resume a run whose ${corruption.name}: SNAPSHOT_INVALID, nothing runs, rows untouched`, async () => {
      const store = await ctx.store();
      const { runId, refunds, agent } = await stoppedAtSecondTrip(ctx, store);
      const before = (await store.load(runId))!;
      const corrupted = await corrupt(store, before, corruption);

      const error = await agent()
        .resume(runId)
        .then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
      expect(isCairnError(error), String(error)).toBe(true);
      expect((error as CairnError).code).toBe('SNAPSHOT_INVALID');
      expect(refunds).toEqual({ r1: 1 });
      const after = (await store.load(runId))!;
      expect(after.run.status).toBe('running');
      expect(after.run.snapshot).toEqual(corrupted.run.snapshot);
      expect(after.journal).toEqual(corrupted.journal);
      // That run alone: one beside it is listed, claimed in the same batch and read as it was written.
      const healthy = newRun({ name: 'refunder', status: 'queued' });
      await store.create(healthy);
      expect((await store.list()).map((run) => run.runId)).toEqual(
        expect.arrayContaining([runId, healthy.runId]),
      );
      if (store.claim !== undefined) {
        const claimed = await store.claim({
          owner: 'beside',
          ttlMs: longTtlMs,
          limit: 10,
          definitions: [{ kind: 'agent', name: 'refunder' }],
        });
        const lease = claimed.find((l) => l.runId === healthy.runId);
        expect(lease?.claimed?.run.snapshot).toEqual(healthy.snapshot);
        for (const other of claimed) await store.release(other);
      }
    });
  }
}

/**
 * Runs an agent whose first trip refunds (a tool that must never run twice) until its process dies as the
 * second trip's model call starts (with `trips: 2`, the third's, after a second refund); its lease is then given
 * back, as a takeover would find it. The dying attempt holds the store's short lease, which a loaded machine can
 * lose before the crash point: then it starts again on a new run (up to five times): what is tested is the
 * resume of the corrupted run.
 */
export async function stoppedAtSecondTrip(
  ctx: ConformanceContext,
  store: DurableStore,
  { trips = 1 }: { trips?: 1 | 2 } = {},
) {
  let died: unknown;
  for (let attempt = 1; attempt <= 5; attempt += 1) {
    const refunds: Record<string, number> = {};
    const refund = defineTool({
      name: 'refund',
      description: 'Refunds an order.',
      input: z.object({ order: z.string() }),
      execute: ({ order }) => {
        refunds[order] = (refunds[order] ?? 0) + 1;
        return { refunded: order };
      },
    });
    const agent = () =>
      defineAgent({
        name: 'refunder',
        model: scriptedModel([
          { toolCalls: [{ id: 'c1', name: 'refund', args: { order: 'r1' } }] },
          { toolCalls: [{ id: 'c2', name: 'refund', args: { order: 'r2' } }] },
          { text: 'refunded' },
        ]),
        tools: [refund],
        durable: { store, leaseMs: ctx.harness().shortTtlMs },
      });
    const runId = newRun().runId;
    died = await agent()
      .execute('refund r1 and r2', {
        runId,
        onBoundary: (boundary) => {
          if (boundary.point === 'effect.before' && boundary.effectId === `trip-${trips}/model`)
            throw new SimulatedCrash(boundary);
        },
      })
      .then(
        () => 'finished',
        (error: unknown) => error,
      );
    if (isCairnError(died) && died.code === 'LEASE_LOST') continue;
    expect(died).toBeInstanceOf(SimulatedCrash);
    await ctx.harness().expireLeases();
    return { runId, refunds, agent };
  }
  throw new Error(
    `the dying attempt lost its lease five times before its crash point: ${String(died)}`,
  );
}

/** Writes the corruption under a lease of its own, then gives the lease back. */
async function corrupt(
  store: DurableStore,
  loaded: StoredRun,
  corruption: Corruption,
): Promise<StoredRun> {
  const lease = (await store.acquire(loaded.run.runId, { owner: 'corrupter', ttlMs: longTtlMs }))!;
  expect(lease).toBeDefined();
  const snapshot = loaded.run.snapshot as Snapshot;
  const journalSeq = snapshot.journalSeq as number;
  if (corruption.snapshot !== undefined) {
    await store.save(lease, {
      status: 'running',
      signature: loaded.run.signature,
      snapshot: corruption.snapshot(snapshot),
      journalSeq,
    });
  }
  if (corruption.journal !== undefined) {
    const next = Math.max(journalSeq, ...loaded.journal.map((entry) => entry.seq)) + 1;
    const entries = corruption.journal(next, pendingId(snapshot)) as unknown as JournalEntry[];
    await store.append(lease, entries);
  }
  await store.release(lease);
  return (await store.load(loaded.run.runId))!;
}
