import { randomBytes } from 'node:crypto';
import { aesGcmCodec, defineAgent, memoryKeyring, memoryStore, protectPayloads } from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { createClient, createWorker } from '@cairn/worker';
import { describe, expect, it } from 'vitest';

describe('a client forgetting a subject', () => {
  it('starts runs for a subject, and forgets that subject’s runs only', async () => {
    const raw = memoryStore();
    const keyring = memoryKeyring();
    const store = protectPayloads(raw, {
      codec: aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1', subjects: keyring }),
    });
    const echo = defineAgent({ name: 'echo', model: scriptedModel([{ text: 'noted' }]) });
    const client = createClient({ store });
    const worker = createWorker({ store, agents: [echo], pollMs: 20 });
    await worker.start();
    try {
      const mine = await client.start(echo, 'my address is 12 Elm Street', { subject: 'user-7' });
      const theirs = await client.start(echo, 'their note', { subject: 'user-8' });
      expect(await client.result(mine.runId, { pollMs: 20 })).toBe('noted');
      expect(await client.result(theirs.runId, { pollMs: 20 })).toBe('noted');
      expect(JSON.stringify(await raw.load(mine.runId))).not.toContain('Elm Street');

      const report = await client.forget({ subject: 'user-7' });
      expect(report).toEqual({ deleted: [mine.runId], remaining: [], keysDeleted: true });
      expect(await client.get(mine.runId)).toBeUndefined();
      expect(await client.get(theirs.runId)).toMatchObject({ status: 'completed' });
      await expect(client.start(echo, 'x', { subject: 'x'.repeat(201) })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
    } finally {
      await worker.close();
    }
    await expect(createClient({ store: raw }).forget({ subject: 'user-8' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});
