import { randomBytes } from 'node:crypto';
import {
  aesGcmCodec,
  CairnError,
  defineAgent,
  defineTool,
  deflateCodec,
  memoryKeyring,
  memoryStore,
  PayloadSealer,
  PayloadUnreadableError,
  protectPayloads,
  type DurableStore,
} from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

function world() {
  const raw = memoryStore();
  const keyring = memoryKeyring();
  const codec = [
    deflateCodec(),
    aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1', subjects: keyring }),
  ];
  const store = protectPayloads(raw, { codec });
  return { raw, store, codec };
}

/** An agent that looks a person's record up (the tool waits for `gate` when given one) and answers. */
function agent(store: DurableStore, gate?: Promise<void>) {
  return defineAgent({
    name: 'records',
    model: scriptedModel([
      { toolCalls: [{ id: 'c1', name: 'lookup', args: { who: 'the person' } }] },
      { text: 'Their diagnosis is on file.' },
    ]),
    tools: [
      defineTool({
        name: 'lookup',
        description: 'Looks a medical record up.',
        input: z.object({ who: z.string() }),
        execute: async () => {
          await gate;
          return { diagnosis: 'confidential diagnosis' };
        },
      }),
    ],
    durable: { store, leaseMs: 600 },
  });
}

describe('forgetting a subject', () => {
  it('deletes its keys, then its runs, stops its live run, and leaves every other run as it was', async () => {
    const { raw, store, codec } = world();
    await agent(store).execute('Alice’s record', { runId: 'alice-1', subject: 'alice' });
    await agent(store).execute('Alice again', { runId: 'alice-2', subject: 'alice' });
    await agent(store).execute('Bob’s record', { runId: 'bob-1', subject: 'bob' });
    await agent(store).execute('Nobody’s record', { runId: 'nobody-1' });

    // Each subject's payloads under its own key; a run without a subject under the shared key.
    expect((await store.load('alice-1'))!.run.subject).toBe('alice');
    const aliceRows = JSON.stringify(await raw.load('alice-1'));
    expect(aliceRows).toMatch(/aes-gcm@s\.[0-9a-f]+:/);
    expect(aliceRows).not.toContain('aes-gcm@k1:');
    expect(aliceRows).not.toContain('confidential');
    expect(JSON.stringify(await raw.load('nobody-1'))).toContain('aes-gcm@k1:');
    // A copy of Alice's rows taken now, as a backup would hold them.
    const backup = (await raw.load('alice-1'))!;

    // A run of Alice's is in its tool call when she is forgotten.
    let open!: () => void;
    const live = agent(store, new Promise<void>((resolve) => (open = resolve)))
      .execute('Alice, live', { runId: 'alice-live', subject: 'alice' })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    await new Promise((resolve) => setTimeout(resolve, 50));
    const forgetting = store.forget!({ subject: 'alice' }, { timeoutMs: 10_000 });
    setTimeout(() => open(), 100);
    const report = await forgetting;

    expect(report.keysDeleted).toBe(true);
    expect(report.remaining).toEqual([]);
    expect(report.deleted.sort()).toEqual(['alice-1', 'alice-2', 'alice-live']);
    const stopped = await live;
    expect(stopped).toBeInstanceOf(CairnError);
    expect((stopped as CairnError).code).toBe('SUBJECT_FORGOTTEN');
    for (const runId of ['alice-1', 'alice-2', 'alice-live'])
      expect(await raw.load(runId)).toBeUndefined();

    // The backup's copy can no longer be read by anyone with the codec.
    const sealer = new PayloadSealer({ codec });
    const reading = sealer.open(
      backup.run.output!,
      sealer.context('alice-1', backup.run.incarnation, 'output'),
    );
    await expect(reading).rejects.toBeInstanceOf(PayloadUnreadableError);
    await expect(reading).rejects.toMatchObject({ reason: 'key-missing' });

    // Everyone else's runs read as before; nothing more is written for Alice.
    expect((await store.load('bob-1'))!.run).toMatchObject({ status: 'completed', subject: 'bob' });
    expect((await store.load('bob-1'))!.run.output).toBe('Their diagnosis is on file.');
    expect((await store.load('nobody-1'))!.run.output).toBe('Their diagnosis is on file.');
    await expect(
      agent(store).execute('Alice, once more', { runId: 'alice-3', subject: 'alice' }),
    ).rejects.toMatchObject({ code: 'SUBJECT_FORGOTTEN' });
  });

  it('reads the run list once, then waits only on the subject’s runs still held', async () => {
    // At production size the list is every run of every subject: read again every 200 ms while one live run
    // finishes its tool call, forgetting one person would read the whole table over and over.
    const { raw, codec } = world();
    let listed = 0;
    const counted: DurableStore = Object.assign(Object.create(raw) as DurableStore, {
      list: async (...args: Parameters<DurableStore['list']>) => {
        const page = await raw.list(...args);
        listed += page.length;
        return page;
      },
    });
    const store = protectPayloads(counted, { codec });
    for (let i = 0; i < 5; i += 1)
      await agent(store).execute(`Bob ${i}`, { runId: `bob-${i}`, subject: 'bob' });
    await agent(store).execute('Alice’s record', { runId: 'alice-1', subject: 'alice' });
    let open!: () => void;
    const live = agent(store, new Promise<void>((resolve) => (open = resolve)))
      .execute('Alice, live', { runId: 'alice-live', subject: 'alice' })
      .catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 50));
    listed = 0;
    const forgetting = store.forget!({ subject: 'alice' }, { timeoutMs: 10_000 });
    setTimeout(() => open(), 700);
    const report = await forgetting;
    expect(report.deleted.sort()).toEqual(['alice-1', 'alice-live']);
    expect(report.remaining).toEqual([]);
    // Stopped by the cancel forget asked for, or at its next write for a forgotten subject.
    expect(await live).toBeInstanceOf(CairnError);
    // Each of the 7 stored runs read once.
    expect(listed).toBe(7);
    for (let i = 0; i < 5; i += 1) expect(await raw.load(`bob-${i}`)).toBeDefined();
  });

  it('gives a child run its parent’s subject, forgets one run by id, and refuses a store without a codec', async () => {
    const { raw, store } = world();
    await agent(store).execute('Bob', { runId: 'bob-1', subject: 'bob' });
    await store.create({
      runId: 'cairn:child:bob-1/n1',
      kind: 'agent',
      name: 'records',
      signature: 's',
      snapshot: { step: 0 },
      parent: { runId: 'bob-1', incarnation: (await raw.load('bob-1'))!.run.incarnation },
    });
    expect((await store.load('cairn:child:bob-1/n1'))!.run.subject).toBe('bob');
    expect(JSON.stringify(await raw.load('cairn:child:bob-1/n1'))).toMatch(/aes-gcm@s\./);

    expect(await store.forget!({ runId: 'bob-1' })).toEqual({
      deleted: ['bob-1'],
      remaining: [],
      keysDeleted: false,
    });
    expect(await raw.load('cairn:child:bob-1/n1')).toBeUndefined();
    expect(memoryStore().forget).toBeUndefined();
    await expect(store.forget!({ subject: '' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});
