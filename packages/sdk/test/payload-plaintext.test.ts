import { randomBytes } from 'node:crypto';
import {
  aesGcmCodec,
  defineAgent,
  isSealed,
  memoryStore,
  plainKey,
  PayloadUnreadableError,
  protectPayloads,
  type DurableStore,
} from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { describe, expect, it } from 'vitest';

const answer = 'Refunded order 17 to the card ending 1111.';
const codec = aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' });

function agent(name: string, store: DurableStore, text = answer) {
  return defineAgent({ name, model: scriptedModel([{ text }]), durable: { store } });
}

async function reasonOf(promise: Promise<unknown>) {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(PayloadUnreadableError);
  return (error as PayloadUnreadableError).reason;
}

describe('outputs a definition keeps in plaintext', () => {
  it('is stored as it is, read without any setting, and every other payload stays encoded', async () => {
    const raw = memoryStore();
    const writer = protectPayloads(raw, { codec, plaintext: { orders: ['output'] } });
    await agent('orders', writer).execute('Refund order 17', { runId: 'plain' });
    await agent('support', writer).execute('Refund order 17', { runId: 'sealed' });

    const stored = (await raw.load('plain'))!.run;
    expect(stored.output).toMatchObject({ [plainKey]: answer });
    expect(isSealed((stored.output as Record<string, unknown>).check)).toBe(true);
    // The input and the conversation are encoded as ever; another definition's output too.
    expect(JSON.stringify(stored.snapshot)).not.toContain('Refund order 17');
    expect(isSealed((await raw.load('sealed'))!.run.output)).toBe(true);

    // A reader with the codec and no plaintext setting reads both.
    const reader = protectPayloads(raw, { codec });
    expect((await reader.load('plain'))!.run.output).toBe(answer);
    expect((await reader.load('sealed'))!.run.output).toBe(answer);
    expect((await reader.list()).map((run) => run.unreadable)).toEqual([undefined, undefined]);
  });

  it('refuses a plaintext output changed, or its value and check copied from another run', async () => {
    const raw = memoryStore();
    const writer = protectPayloads(raw, { codec, plaintext: { orders: ['output'] } });
    const other = 'Refunded order 99 to the card ending 4444.';
    await agent('orders', writer).execute('Refund order 17', { runId: 'a' });
    await agent('orders', writer, other).execute('Refund order 99', { runId: 'b' });
    const a = (await raw.load('a'))!.run;
    const b = (await raw.load('b'))!.run;
    const checkOf = (output: unknown) => (output as { check: string }).check;

    await raw.replacePayloads!('a', a.incarnation, new Map([[answer, other]]));
    expect(await reasonOf(writer.load('a'))).toBe('rejected');
    // Its value and its check both from run b: the check is bound to b.
    await raw.replacePayloads!(
      'a',
      a.incarnation,
      new Map([[checkOf(a.output), checkOf(b.output)]]),
    );
    expect(await reasonOf(writer.load('a'))).toBe('rejected');
    expect((await writer.load('b'))!.run.output).toBe(other);
  });
});
