import { randomBytes } from 'node:crypto';
import {
  aesGcmCodec,
  defineAgent,
  defineTool,
  deflateCodec,
  memoryKeyring,
  memoryStore,
  PayloadUnreadableError,
  pendingApprovals,
  protectPayloads,
  RunWaitingError,
  type DurableStore,
} from '@cairn/sdk';
import { createFakeClock, scriptedModel } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const k1 = randomBytes(32);
const k2 = randomBytes(32);
const keyring = memoryKeyring();

/** The store as a process with these keys sees it, writing with `current`. */
function withKeys(raw: DurableStore, keys: Record<string, Buffer>, current: string) {
  return protectPayloads(raw, {
    codec: [deflateCodec(), aesGcmCodec({ keys, current, subjects: keyring })],
  });
}

/** An agent that looks an order up, refunds it once a person approves, and answers; streams what it says. */
function agent(store: DurableStore, refunds: string[], gate?: Promise<void>) {
  return defineAgent({
    name: 'orders',
    model: scriptedModel([
      { toolCalls: [{ id: 'c1', name: 'lookup', args: { order: 'order 17, card 4111' } }] },
      { toolCalls: [{ id: 'c2', name: 'refund', args: { order: 'order 17' } }] },
      { text: 'Refunded order 17 to the card ending 1111.' },
    ]),
    tools: [
      defineTool({
        name: 'lookup',
        description: 'Looks an order up.',
        input: z.object({ order: z.string() }),
        execute: async () => {
          await gate;
          return { customer: 'Ana Lima', address: '12 Rua Augusta' };
        },
      }),
      defineTool({
        name: 'refund',
        description: 'Refunds an order.',
        input: z.object({ order: z.string() }),
        execute: ({ order }) => (refunds.push(order), { refunded: true }),
      }),
    ],
    approval: { tools: { refund: true } },
    durable: { store, leaseMs: 30_000, stream: true },
  });
}

/** Every payload of a run as the store underneath holds it. */
async function rowsOf(raw: DurableStore, runId: string): Promise<string> {
  return JSON.stringify([
    await raw.load(runId),
    await raw.signalPayloads!(runId),
    await raw.readStream!(runId),
  ]);
}

/** Everything a client reads of a run: a payload it cannot decode throws. */
async function readAll(store: DurableStore, runId: string) {
  return {
    stored: await store.load(runId),
    mailbox: await store.mailbox(runId),
    stream: await store.readStream!(runId),
  };
}

describe('re-encrypting stored payloads under a new key', () => {
  it('moves every payload of ended, waiting and decided runs to the new key; the old key can then go', async () => {
    const raw = memoryStore();
    const v1 = withKeys(raw, { k1 }, 'k1');
    const refunds: string[] = [];
    // Ended, waiting for a decision, decided but not resumed yet, and one of a subject (its own key).
    const first = agent(v1, refunds);
    for (const runId of ['ended', 'waiting', 'decided']) {
      const error = await first.execute('Refund order 17', { runId }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RunWaitingError);
    }
    const [held] = pendingApprovals((await v1.load('ended'))!.run.wait!.detail);
    await first.approve('ended', 'c2', { argsHash: held!.argsHash, by: 'ana' });
    await first.resume('ended');
    await first.approve('decided', 'c2', { argsHash: held!.argsHash, by: 'bea' });
    await agent(v1, refunds)
      .execute('Refund order 17', { runId: 'theirs', subject: 'customer-9' })
      .catch(() => undefined);
    expect(refunds).toEqual(['order 17']);

    const only2 = withKeys(raw, { k2 }, 'k2');
    const unreadable = await only2.load('ended').catch((e: unknown) => e);
    expect(unreadable).toBeInstanceOf(PayloadUnreadableError);
    expect((unreadable as PayloadUnreadableError).reason).toBe('key-missing');

    // The deploy that rotates: every process reads k1 and k2 and writes k2; then the stored rows are moved.
    const v2 = withKeys(raw, { k1, k2 }, 'k2');
    const report = await v2.reencrypt!();
    expect(report).toMatchObject({
      runs: 4,
      rewritten: 3,
      raced: 0,
      unreadable: [],
      complete: true,
    });
    for (const runId of ['ended', 'waiting', 'decided']) {
      const rows = await rowsOf(raw, runId);
      expect(rows).not.toContain('@k1:');
      expect(rows).toContain('@k2:');
      expect(rows).not.toContain('Ana Lima');
    }
    // The subject's run was under its own key, which rotation does not touch.
    expect(await rowsOf(raw, 'theirs')).toMatch(/@s\.[0-9a-f]+:/);

    // k1 is gone: everything reads, the standing decision included, and the decided run goes on once.
    for (const runId of ['ended', 'waiting', 'decided', 'theirs']) await readAll(only2, runId);
    expect((await only2.load('ended'))!.run).toMatchObject({ status: 'completed' });
    const later = agent(only2, refunds);
    const repeat = await later.approve('decided', 'c2', { argsHash: held!.argsHash, by: 'bea' });
    expect(repeat).toMatchObject({ duplicate: true, decision: { by: 'bea' } });
    await later.resume('decided');
    expect(refunds).toEqual(['order 17', 'order 17']);
    expect((await only2.load('decided'))!.run.status).toBe('completed');

    // A second pass finds nothing left to move.
    expect(await only2.reencrypt!()).toMatchObject({ runs: 4, rewritten: 0, payloads: 0 });
  });

  it('a run resumed by a process with the new key writes its conversation under the new key, not the groups it read', async () => {
    const raw = memoryStore();
    const refunds: string[] = [];
    const old = agent(withKeys(raw, { k1 }, 'k1'), refunds);
    await old.execute('Refund order 17', { runId: 'r' }).catch(() => undefined);
    const v2 = withKeys(raw, { k1, k2 }, 'k2');
    const [call] = pendingApprovals((await v2.load('r'))!.run.wait!.detail);
    const current = agent(v2, refunds);
    await current.approve('r', 'c2', { argsHash: call!.argsHash });
    await current.resume('r');
    expect(JSON.stringify((await raw.load('r'))!.run.snapshot)).not.toContain('@k1:');
  });

  it('moves the runs a holder with the old key goes on writing; a pass after it ends leaves nothing on the old key', async () => {
    const raw = memoryStore();
    const refunds: string[] = [];
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // An old process is in the middle of a tool call while the rotation's pass runs.
    const running = agent(withKeys(raw, { k1 }, 'k1'), refunds, gate)
      .execute('Refund order 17', { runId: 'live' })
      .catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const v2 = withKeys(raw, { k1, k2 }, 'k2');
    const during = await v2.reencrypt!();
    expect(during).toMatchObject({ runs: 1, rewritten: 1, unreadable: [] });
    open();
    expect(await running).toBeInstanceOf(RunWaitingError);
    // The old holder wrote on with k1 after the pass; the pass that follows the deploy moves that too.
    expect(await rowsOf(raw, 'live')).toContain('@k1:');
    const after = await v2.reencrypt!();
    expect(after.rewritten).toBe(1);
    expect(await rowsOf(raw, 'live')).not.toContain('@k1:');
    const only2 = withKeys(raw, { k2 }, 'k2');
    const { stored } = await readAll(only2, 'live');
    expect(stored!.run.status).toBe('waiting');
  });

  it('ends while runs keep being created: the runs created after it began are left to the next pass', async () => {
    // The store's clock says when each run was created: the runs made during the pass, after it began.
    const clock = createFakeClock({ now: 1_000_000 });
    const raw = memoryStore({ clock });
    const old = withKeys(raw, { k1 }, 'k1');
    const created = async (runId: string) =>
      old.create({ runId, kind: 'agent', name: 'n', signature: 's', snapshot: { note: runId } });
    for (let i = 0; i < 5; i += 1) await created(`before-${i}`);
    const v2 = withKeys(raw, { k1, k2 }, 'k2');
    // Each page read, another run is created by a process still writing k1: without a bound, the pass would
    // chase them for ever.
    let made = 0;
    const began = clock.now();
    await clock.advance(1);
    const report = await v2.reencrypt!({
      pageSize: 1,
      createdBefore: began + 1,
      onProgress: () => void created(`during-${(made += 1)}`),
    });
    expect(report).toMatchObject({ runs: 5, rewritten: 5, complete: true });
    expect(made).toBeGreaterThanOrEqual(5);
    expect(await rowsOf(raw, 'during-1')).toContain('@k1:');
    expect((await v2.reencrypt!()).rewritten).toBeGreaterThanOrEqual(made);
  });

  it('reports a run it cannot read, and moves the others', async () => {
    const raw = memoryStore();
    const refunds: string[] = [];
    await agent(withKeys(raw, { k1 }, 'k1'), refunds)
      .execute('Refund order 17', { runId: 'under-k1' })
      .catch(() => undefined);
    const k0 = randomBytes(32);
    await agent(withKeys(raw, { k0 }, 'k0'), refunds)
      .execute('Refund order 17', { runId: 'under-a-lost-key' })
      .catch(() => undefined);
    const report = await withKeys(raw, { k1, k2 }, 'k2').reencrypt!();
    expect(report).toMatchObject({ runs: 2, rewritten: 1 });
    expect(report.unreadable).toEqual([
      { runId: 'under-a-lost-key', reason: expect.stringContaining('k0') as string },
    ]);
  });
});
