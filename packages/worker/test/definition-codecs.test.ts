import { randomBytes } from 'node:crypto';
import { aesGcmCodec, defineAgent, memoryStore, protectPayloads } from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { createClient, createWorker } from '@cairn/worker';
import { describe, expect, it } from 'vitest';

// A codec is set where the store is given: a definition with a codec of its own is run by a worker (and read by a
// client) whose store is the same database behind that codec. Each worker claims only its own definitions' runs.
describe('definitions with codecs of their own, on one database', () => {
  it('runs each definition under its codec and key, and a reader without that key gets a typed refusal', async () => {
    const raw = memoryStore();
    const medical = protectPayloads(raw, {
      codec: aesGcmCodec({ keys: { med1: randomBytes(32) }, current: 'med1' }),
    });
    const billing = protectPayloads(raw, {
      codec: aesGcmCodec({ keys: { bill1: randomBytes(32) }, current: 'bill1' }),
    });
    const triage = defineAgent({ name: 'triage', model: scriptedModel([{ text: 'seen' }]) });
    const invoice = defineAgent({ name: 'invoice', model: scriptedModel([{ text: 'sent' }]) });
    const workers = [
      createWorker({ store: medical, agents: [triage], pollMs: 20 }),
      createWorker({ store: billing, agents: [invoice], pollMs: 20 }),
    ];
    for (const worker of workers) await worker.start();
    try {
      const medicalClient = createClient({ store: medical });
      const billingClient = createClient({ store: billing });
      const symptoms = await medicalClient.start(triage, 'chest pain since Tuesday');
      const order = await billingClient.start(invoice, 'invoice 4411 for ACME');
      expect(await medicalClient.result(symptoms.runId, { pollMs: 20 })).toBe('seen');
      expect(await billingClient.result(order.runId, { pollMs: 20 })).toBe('sent');

      const medicalRows = JSON.stringify(await raw.load(symptoms.runId));
      const billingRows = JSON.stringify(await raw.load(order.runId));
      expect(medicalRows).toContain('aes-gcm@med1:');
      expect(medicalRows).not.toContain('bill1');
      expect(medicalRows).not.toContain('chest pain');
      expect(billingRows).toContain('aes-gcm@bill1:');
      expect(billingRows).not.toContain('med1');
      expect(billingRows).not.toContain('ACME');

      // Listing works across both (ids, names and statuses are plaintext); payloads only with their key.
      expect((await billingClient.list()).map((run) => run.name).sort()).toEqual([
        'invoice',
        'triage',
      ]);
      await expect(billingClient.result(symptoms.runId)).rejects.toMatchObject({
        code: 'PAYLOAD_UNREADABLE',
        reason: 'key-missing',
      });
    } finally {
      for (const worker of workers) await worker.close();
    }
  });
});
