import { randomBytes } from 'node:crypto';
import {
  aesGcmCodec,
  deflateCodec,
  PayloadSealer,
  PayloadUnreadableError,
  protectPayloads,
  sealedSnapshotMark,
  type DurableStore,
  type JournalEntry,
  type JsonValue,
  type PayloadUnreadableReason,
  type StoredRun,
} from '@cairn/sdk';
import { describe, expect, it } from 'vitest';
import { stoppedAtSecondTrip } from './corruption-tests.js';
import { longTtlMs, newRun, useHarness, type ConformanceContext } from './context.js';
import type { StoreHarnessFactory } from './harness.js';

type Sealed = { [key: string]: JsonValue } & { items: Record<string, string[]> };

/** A change made to a run's stored rows with the store underneath the codec, as someone with the database could. */
interface Tampering {
  name: string;
  reason: PayloadUnreadableReason;
  /** The record itself is changed, so a listing shows the run as unreadable. */
  listed?: true;
  tamper(
    raw: DurableStore,
    victim: StoredRun,
    donor: StoredRun,
    sealer: PayloadSealer,
  ): Promise<void>;
}

const conversationOf = (snapshot: Sealed): string =>
  Object.keys(snapshot.items).find((path) => path.includes('messages'))!;

const tamperings: Tampering[] = [
  {
    name: 'its snapshot replaced by another run’s',
    listed: true,
    reason: 'rejected',
    tamper: (raw, victim, donor) => rewrite(raw, victim, donor.run.snapshot!),
  },
  {
    name: 'two messages of its conversation swapped',
    listed: true,
    reason: 'rejected',
    tamper(raw, victim) {
      const snapshot = structuredClone(victim.run.snapshot) as Sealed;
      const messages = snapshot.items[conversationOf(snapshot)]!;
      expect(messages.length).toBeGreaterThanOrEqual(2);
      [messages[0], messages[1]] = [messages[1]!, messages[0]!];
      return rewrite(raw, victim, snapshot);
    },
  },
  {
    name: 'its conversation cut by a message',
    listed: true,
    reason: 'rejected',
    tamper(raw, victim) {
      const snapshot = structuredClone(victim.run.snapshot) as Sealed;
      snapshot.items[conversationOf(snapshot)]!.pop();
      return rewrite(raw, victim, snapshot);
    },
  },
  {
    name: 'a message of another run put in its conversation',
    listed: true,
    reason: 'rejected',
    tamper(raw, victim, donor) {
      const snapshot = structuredClone(victim.run.snapshot) as Sealed;
      const theirs = (donor.run.snapshot as Sealed).items[conversationOf(snapshot)]!;
      snapshot.items[conversationOf(snapshot)]![0] = theirs[0]!;
      return rewrite(raw, victim, snapshot);
    },
  },
  {
    name: 'its snapshot replaced by plaintext',
    listed: true,
    reason: 'not-encoded',
    async tamper(raw, victim, _donor, sealer) {
      const opened = await protectPayloads(raw, { codec: sealerCodec(sealer) }).load(
        victim.run.runId,
      );
      return rewrite(raw, victim, opened!.run.snapshot!);
    },
  },
  {
    name: 'a journal outcome encoded for another run',
    reason: 'rejected',
    async tamper(raw, victim, donor, sealer) {
      const context = sealer.context(
        donor.run.runId,
        donor.run.incarnation,
        'journal',
        'trip-1/model#99',
      );
      const value = await sealer.seal({ text: 'forged', toolCalls: [] }, context);
      return appendRaw(raw, victim, { status: 'ok', value });
    },
  },
  {
    name: 'a journal outcome in plaintext',
    reason: 'not-encoded',
    tamper: (raw, victim) => appendRaw(raw, victim, { status: 'ok', value: { text: 'forged' } }),
  },
  {
    name: 'a signal encoded for another run',
    reason: 'rejected',
    async tamper(raw, victim, donor, sealer) {
      const payload = await sealer.seal(
        'note',
        sealer.context(donor.run.runId, '', 'signal', 'note'),
      );
      await raw.signal(victim.run.runId, { name: 'note', payload });
    },
  },
];

// The codecs of a sealer made here: the suite keeps them beside it.
const codecs = new WeakMap<PayloadSealer, ReturnType<typeof suiteCodec>>();
const suiteCodec = () => [
  deflateCodec(),
  aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' }),
];
const sealerCodec = (sealer: PayloadSealer) => codecs.get(sealer)!;

/**
 * Every way of moving or replacing an encoded payload in a run's rows is refused with `PAYLOAD_UNREADABLE`
 * when the run is read through its codec, and the run does not advance: no tool runs again, its rows stay as
 * they were changed to. The harness's store is the one underneath (without a codec): the suite puts the codec
 * on it, and tampers through the store's own writes.
 */
export function describePayloadTampering(name: string, factory: StoreHarnessFactory): void {
  describe(name, () => {
    const ctx = useHarness(factory);
    const codec = suiteCodec();
    const sealer = new PayloadSealer({ codec });
    codecs.set(sealer, codec);
    const stores = async () => {
      const raw = await ctx.store();
      return { raw, store: protectPayloads(raw, { codec }) };
    };

    for (const tampering of tamperings) {
      it(`refuses to resume a run with ${tampering.name} (${tampering.reason}): nothing runs, rows as left`, async () => {
        const { raw, store } = await stores();
        // Two trips done: its conversation is two groups (the messages each checkpoint added).
        const victim = await stoppedAtSecondTrip(ctxWith(ctx, store), store, { trips: 2 });
        const donor = await stoppedAtSecondTrip(ctxWith(ctx, store), store, { trips: 2 });
        await tampering.tamper(
          raw,
          (await raw.load(victim.runId))!,
          (await raw.load(donor.runId))!,
          sealer,
        );
        const tampered = (await raw.load(victim.runId))!;

        const error = await victim
          .agent()
          .resume(victim.runId)
          .then(
            () => undefined,
            (thrown: unknown) => thrown,
          );
        expect(error, String(error)).toBeInstanceOf(PayloadUnreadableError);
        expect((error as PayloadUnreadableError).code).toBe('PAYLOAD_UNREADABLE');
        expect((error as PayloadUnreadableError).reason).toBe(tampering.reason);
        expect(victim.refunds).toEqual({ r1: 1, r2: 1 });
        const after = (await raw.load(victim.runId))!;
        expect(after.run.status).toBe('running');
        expect(after.run.snapshot).toEqual(tampered.run.snapshot);
        expect(after.journal).toEqual(tampered.journal);

        // That run alone: the run beside it read as written, claimed in the same batch. A listing reads
        // records only: a changed snapshot shows there, a journal entry or a signal to whoever loads the run.
        const listed = await store.list();
        if (tampering.listed === true) {
          const shown = listed.find((run) => run.runId === victim.runId);
          expect(shown?.unreadable).toMatch(/cannot be read/);
        }
        expect(listed.find((run) => run.runId === donor.runId)?.unreadable).toBeUndefined();
        if (store.claim !== undefined) {
          const claimed = await store.claim({
            owner: 'beside',
            ttlMs: longTtlMs,
            limit: 10,
            definitions: [{ kind: 'agent', name: 'refunder' }],
          });
          expect(claimed.find((lease) => lease.runId === victim.runId)?.claimed).toBeUndefined();
          const beside = claimed.find((lease) => lease.runId === donor.runId);
          expect(beside?.claimed?.run.snapshot).toEqual(
            (await store.load(donor.runId))!.run.snapshot,
          );
          for (const lease of claimed) await store.release(lease);
        }
      });
    }

    it('refuses an output, an error or a stream chunk moved to another run or place', async () => {
      const { raw, store } = await stores();
      const a = newRun({ status: 'queued' });
      const b = newRun({ status: 'queued' });
      await store.create(a);
      await store.create(b);
      const leaseA = (await store.acquire(a.runId, { owner: 'w', ttlMs: longTtlMs }))!;
      const leaseB = (await store.acquire(b.runId, { owner: 'w', ttlMs: longTtlMs }))!;
      if (store.appendStream !== undefined) {
        const chunk = (position: number, text: string) => ({
          position,
          unit: 'trip-0',
          at: 1,
          part: { type: 'text' as const, text },
        });
        await store.appendStream(leaseA, [chunk(1, 'private one'), chunk(2, 'private two')]);
        const [first] = await raw.readStream!(a.runId, { limit: 10 });
        await raw.appendStream!(leaseA, [{ ...first!, position: 3 }]);
        expect(await reasonOf(store.readStream!(a.runId, { limit: 10 }))).toBe('rejected');
        expect(await store.readStream!(a.runId, { limit: 2 })).toHaveLength(2);
      }
      await store.save(leaseB, {
        status: 'completed',
        signature: 'sig-1',
        snapshot: { step: 1 },
        output: { secret: 'b' },
        journalSeq: 0,
      });
      await store.release(leaseB);
      await store.updateStatus(leaseA, {
        status: 'suspended',
        error: { name: 'Error', code: 'X', message: 'a secret', retryable: false },
      });
      const storedB = (await raw.load(b.runId))!;
      const storedA = (await raw.load(a.runId))!;
      await store.release(leaseA);
      const leaseA2 = (await raw.acquire(a.runId, { owner: 'tamperer', ttlMs: longTtlMs }))!;
      // B's encoded output, as A's own: written with A's own snapshot.
      await raw.save(leaseA2, {
        status: 'completed',
        signature: 'sig-1',
        snapshot: storedA.run.snapshot!,
        output: storedB.run.output!,
        journalSeq: storedA.checkpointSeq ?? 0,
      });
      expect(await reasonOf(store.load(a.runId))).toBe('rejected');
      const c = newRun({ status: 'queued' });
      await store.create(c);
      const leaseC = (await raw.acquire(c.runId, { owner: 'tamperer', ttlMs: longTtlMs }))!;
      await raw.updateStatus(leaseC, { status: 'suspended', error: storedA.run.error! });
      expect(await reasonOf(store.load(c.runId))).toBe('rejected');
    });
  });
}

function ctxWith(ctx: ConformanceContext, store: DurableStore): ConformanceContext {
  return { harness: ctx.harness, store: () => Promise.resolve(store) };
}

async function reasonOf(promise: Promise<unknown>): Promise<PayloadUnreadableReason | undefined> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error, String(error)).toBeInstanceOf(PayloadUnreadableError);
  return (error as PayloadUnreadableError).reason;
}

/** Writes `snapshot` as the run's checkpoint, as stored, under a lease of its own. */
async function rewrite(raw: DurableStore, victim: StoredRun, snapshot: JsonValue): Promise<void> {
  expect((victim.run.snapshot as Sealed)[sealedSnapshotMark]).toBe(1);
  const lease = (await raw.acquire(victim.run.runId, { owner: 'tamperer', ttlMs: longTtlMs }))!;
  await raw.save(lease, {
    status: 'running',
    signature: victim.run.signature,
    snapshot,
    journalSeq: victim.checkpointSeq ?? 0,
  });
  await raw.release(lease);
}

/** Appends a settled entry for the run's pending model call, as stored. */
async function appendRaw(raw: DurableStore, victim: StoredRun, outcome: JsonValue): Promise<void> {
  const lease = (await raw.acquire(victim.run.runId, { owner: 'tamperer', ttlMs: longTtlMs }))!;
  const seq = Math.max(victim.checkpointSeq ?? 0, ...victim.journal.map((entry) => entry.seq)) + 1;
  const entry = {
    seq,
    type: 'settled',
    effectId: 'trip-1/model',
    at: 0,
    outcome,
  } as unknown as JournalEntry;
  await raw.append(lease, [entry]);
  await raw.release(lease);
}
