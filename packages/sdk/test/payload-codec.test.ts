import { randomBytes } from 'node:crypto';
import {
  aesGcmCodec,
  CairnError,
  defineAgent,
  defineTool,
  deflateCodec,
  isSealed,
  memoryStore,
  PayloadSealer,
  protectPayloads,
  type Checkpoint,
  type DurableStore,
  PayloadUnreadableError,
  type JsonValue,
  type PayloadCodec,
  type PayloadUnreadableReason,
} from '@cairn/sdk';
import { scriptedModel, SimulatedCrash } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const k1 = randomBytes(32);
const k2 = randomBytes(32);
const sealer = (codec: PayloadCodec | PayloadCodec[], decodeWith?: PayloadCodec[]) =>
  new PayloadSealer({ codec, ...(decodeWith === undefined ? {} : { decodeWith }) });
const encrypted = sealer([deflateCodec(), aesGcmCodec({ keys: { k1 }, current: 'k1' })]);
const here = encrypted.context('run-a', 'inc-1', 'journal', 'charge-1#4');

async function refusal(promise: Promise<unknown>): Promise<PayloadUnreadableReason> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(PayloadUnreadableError);
  expect((error as CairnError).code).toBe('PAYLOAD_UNREADABLE');
  expect((error as CairnError).retryable).toBe(false);
  return (error as PayloadUnreadableError).reason;
}

describe('a payload sealer', () => {
  it('gives back every JSON value it sealed, from a string that names its steps and key', async () => {
    const values: JsonValue[] = [
      null,
      0,
      'card 4111 1111 1111 1111',
      { nested: [1, 'two', { three: true }], emoji: 'ünïcödé 🔐' },
      'x'.repeat(100_000),
    ];
    for (const value of values) {
      const sealed = await encrypted.seal(value, here);
      expect(isSealed(sealed)).toBe(true);
      expect(sealed.startsWith('cairn:1:deflate+aes-gcm@k1:')).toBe(true);
      if (typeof value === 'string') expect(sealed).not.toContain(value.slice(0, 12));
      expect(await encrypted.open(sealed, here)).toEqual(value);
    }
  });

  it('refuses a payload bound to another run, incarnation, kind or position', async () => {
    const sealed = await encrypted.seal({ charged: 4200 }, here);
    const elsewhere = [
      encrypted.context('run-b', 'inc-1', 'journal', 'charge-1#4'),
      encrypted.context('run-a', 'inc-2', 'journal', 'charge-1#4'),
      encrypted.context('run-a', 'inc-1', 'output', 'charge-1#4'),
      encrypted.context('run-a', 'inc-1', 'journal', 'charge-1#5'),
      // The parts are joined unambiguously: moving a character from one to the next is another place.
      encrypted.context('run-ai', 'nc-1', 'journal', 'charge-1#4'),
    ];
    for (const context of elsewhere)
      expect(await refusal(encrypted.open(sealed, context))).toBe('rejected');
  });

  it('refuses plaintext, a changed byte, a string in no known format, and an unknown codec', async () => {
    expect(await refusal(encrypted.open({ charged: 4200 }, here))).toBe('not-encoded');
    expect(await refusal(encrypted.open('plain text', here))).toBe('not-encoded');
    const sealed = await encrypted.seal({ charged: 4200 }, here);
    // One character of the data changed: another digit of the same base-85 group, so a byte changes.
    const at = sealed.length - 20;
    const changed = sealed.slice(0, at) + (sealed[at] === '0' ? '1' : '0') + sealed.slice(at + 1);
    expect(await refusal(encrypted.open(changed, here))).toBe('rejected');
    expect(await refusal(encrypted.open(`${sealed}"`, here))).toBe('malformed');
    expect(await refusal(encrypted.open('cairn:1:no colon', here))).toBe('malformed');
    expect(await refusal(encrypted.open('cairn:1:Bad Step:AAAA', here))).toBe('malformed');
    expect(await refusal(encrypted.open(sealed.replace('deflate', 'zstd'), here))).toBe(
      'unknown-codec',
    );
  });

  it('reads what an older key wrote after a rotation, writes with the new one, and names a key that is gone', async () => {
    const before = await encrypted.seal('written under k1', here);
    const rotated = sealer([deflateCodec(), aesGcmCodec({ keys: { k1, k2 }, current: 'k2' })]);
    const after = await rotated.seal('written under k2', here);
    expect(after.startsWith('cairn:1:deflate+aes-gcm@k2:')).toBe(true);
    expect(await rotated.open(before, here)).toBe('written under k1');
    expect(await rotated.open(after, here)).toBe('written under k2');
    const k1Gone = sealer([deflateCodec(), aesGcmCodec({ keys: { k2 }, current: 'k2' })]);
    expect(await refusal(k1Gone.open(before, here))).toBe('key-missing');
    // A key under a reused id is another key: its payloads fail their check, never decode to garbage.
    const reused = sealer([deflateCodec(), aesGcmCodec({ keys: { k1: k2 }, current: 'k1' })]);
    expect(await refusal(reused.open(before, here))).toBe('rejected');
  });

  it('reads rows of a codec given up, kept with decodeWith, and takes asynchronous codecs', async () => {
    const compressed = await encrypted.seal({ note: 'deflated' }, here);
    const withoutDeflate = sealer([aesGcmCodec({ keys: { k1 }, current: 'k1' })], [deflateCodec()]);
    expect(await withoutDeflate.open(compressed, here)).toEqual({ note: 'deflated' });
    expect(
      await refusal(sealer(aesGcmCodec({ keys: { k1 }, current: 'k1' })).open(compressed, here)),
    ).toBe('unknown-codec');
    // A key service: answers later, and wraps what it is given.
    const envelope: PayloadCodec = {
      name: 'kms-envelope',
      encode: async (data) => {
        await new Promise((resolve) => setTimeout(resolve, 1));
        return { data: Buffer.concat([Buffer.from('KMS'), data]), keyId: 'arn.key-7' };
      },
      decode: async (data, context) => {
        expect(context.keyId).toBe('arn.key-7');
        return data.subarray(3);
      },
    };
    const kms = sealer([deflateCodec(), envelope]);
    const sealed = await kms.seal({ secret: 1 }, here);
    expect(sealed.startsWith('cairn:1:deflate+kms-envelope@arn.key-7:')).toBe(true);
    expect(await kms.open(sealed, here)).toEqual({ secret: 1 });
  });

  it('refuses keys and codecs it could not use, when it is made', () => {
    expect(() => aesGcmCodec({ keys: { k1: randomBytes(16) }, current: 'k1' })).toThrow(/32/);
    expect(() => aesGcmCodec({ keys: { k1 }, current: 'k9' })).toThrow(/k9/);
    expect(() => aesGcmCodec({ keys: { 'a:b': k1 }, current: 'a:b' })).toThrow(/key id/);
    expect(() => sealer([])).toThrow(/at least one/);
    expect(() => sealer({ ...deflateCodec(), name: 'Deflate+' })).toThrow(/name/);
    // A key may be given as base64.
    expect(() => aesGcmCodec({ keys: { k1: k1.toString('base64') }, current: 'k1' })).not.toThrow();
  });
});

describe('a snapshot behind protectPayloads', () => {
  const codec = [deflateCodec(), aesGcmCodec({ keys: { k1 }, current: 'k1' })];
  const message = (n: number) => ({ role: 'user', content: `message ${n} `.repeat(20) });

  /** A memory store that keeps what each `save` was given, as the store underneath received it. */
  function recording() {
    const raw = memoryStore();
    const saved: Checkpoint[] = [];
    const store: DurableStore = {
      ...raw,
      save: (fence, checkpoint) => (saved.push(checkpoint), raw.save(fence, checkpoint)),
    };
    return { raw, store, saved };
  }
  const groupsOf = (checkpoint: Checkpoint) =>
    (checkpoint.snapshot as { items: Record<string, string[]> }).items['["state","messages"]']!;

  it('encodes the messages a checkpoint added as one group, and reuses the groups before it, after a load too', async () => {
    const { raw, store, saved } = recording();
    const one = protectPayloads(store, { codec });
    const messages = [message(1), message(2), message(3)];
    await one.create({
      runId: 'r',
      kind: 'agent',
      name: 'a',
      signature: 's',
      snapshot: { state: { messages: [] } },
    });
    const lease = (await one.acquire('r', { owner: 'w', ttlMs: 60_000 }))!;
    const checkpoint = (state: JsonValue, journalSeq: number) =>
      ({ status: 'running', signature: 's', snapshot: { state }, journalSeq }) as const;
    await one.save(lease, checkpoint({ messages }, 1));
    await one.save(lease, checkpoint({ messages: [...messages, message(4), message(5)] }, 2));
    const [first, second] = saved.map(groupsOf);
    expect(first).toHaveLength(1);
    expect(second).toHaveLength(2);
    expect(second![0]).toBe(first![0]);
    expect(await one.load('r').then((stored) => stored!.run.snapshot)).toEqual({
      state: { messages: [...messages, message(4), message(5)] },
    });

    // Another process loads the run: what it read is what it writes back, not encoded again.
    const other = protectPayloads(store, { codec });
    await one.release(lease);
    const taken = (await other.acquire('r', { owner: 'w2', ttlMs: 60_000 }))!;
    const loaded = (await other.load('r'))!.run.snapshot as { state: { messages: JsonValue[] } };
    await other.save(taken, checkpoint({ messages: [...loaded.state.messages, message(6)] }, 3));
    const third = groupsOf(saved.at(-1)!);
    expect(third.slice(0, 2)).toEqual(second);
    expect(third).toHaveLength(3);
    // Nothing of the messages is stored in plaintext.
    expect(JSON.stringify(await raw.load('r'))).not.toContain('message 1');
  });
});

const conversationGroups = (checkpoint: Checkpoint) =>
  (checkpoint.snapshot as { items: Record<string, string[]> }).items['["state","messages"]']!;

describe('a run resumed behind protectPayloads', () => {
  it('writes its conversation on from where it was, not encoded again, in a process that did not write it', async () => {
    const codec = [deflateCodec(), aesGcmCodec({ keys: { k1 }, current: 'k1' })];
    const raw = memoryStore();
    const saved: Checkpoint[] = [];
    const recording: DurableStore = {
      ...raw,
      save: (fence, checkpoint) => (saved.push(checkpoint), raw.save(fence, checkpoint)),
    };
    const model = () =>
      scriptedModel([
        { text: 'one '.repeat(50), toolCalls: [{ id: 'c1', name: 'note', args: { n: 1 } }] },
        { text: 'two '.repeat(50), toolCalls: [{ id: 'c2', name: 'note', args: { n: 2 } }] },
        { text: 'done' },
      ]);
    const note = defineTool({
      name: 'note',
      description: 'Notes a number.',
      input: z.object({ n: z.number() }),
      execute: ({ n }) => ({ noted: n }),
    });
    const agent = (store: DurableStore) =>
      defineAgent({
        name: 'notes',
        model: model(),
        tools: [note],
        durable: { store, leaseMs: 50 },
      });
    const crashed = await agent(protectPayloads(recording, { codec }))
      .execute('take notes', {
        runId: 'r',
        onBoundary: (boundary) => {
          if (boundary.point === 'effect.before' && boundary.effectId === 'trip-2/model')
            throw new SimulatedCrash(boundary);
        },
      })
      .catch((error: unknown) => error);
    expect(crashed).toBeInstanceOf(SimulatedCrash);
    const beforeCrash = conversationGroups(saved.at(-1)!);
    await new Promise((resolve) => setTimeout(resolve, 60));

    // Another process (another protectPayloads, nothing cached) resumes it.
    await agent(protectPayloads(recording, { codec })).resume('r');
    const afterResume = conversationGroups(saved[saved.length - 1 - 0]!);
    expect(afterResume.slice(0, beforeCrash.length)).toEqual(beforeCrash);
  });
});
