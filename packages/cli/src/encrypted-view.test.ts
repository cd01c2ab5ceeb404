import {
  memoryStore,
  PayloadUnreadableError,
  protectPayloads,
  sealedPrefix,
  type DurableStore,
} from '@cairn/sdk';
import { beforeAll, describe, expect, it } from 'vitest';
import { codec } from '../test/fixtures/codec-module.js';
import {
  markerPrefix,
  seedEncryptedRuns,
  type EncryptedRuns,
} from '../test/fixtures/encrypted-runs.js';
import { hideEncryptedPayloads } from './encrypted-store.js';
import {
  encryptedText,
  hasEncryptedPayloads,
  hideRecordPayloads,
  hideSealed,
  unreadableCode,
} from './encrypted-view.js';

describe('the encrypted view of runs', () => {
  const raw: DurableStore = memoryStore();
  let ids: EncryptedRuns;
  beforeAll(async () => {
    ids = await seedEncryptedRuns(protectPayloads(raw, { codec }));
  });

  it('shows every payload a codec encoded as "(encrypted)", from every answer of the store', async () => {
    const shown = hideEncryptedPayloads(raw);
    for (const runId of Object.values(ids)) {
      // What the store holds is encoded: the view has ciphertext to hide, and markers to keep hidden.
      const stored = JSON.stringify(await raw.load(runId));
      expect(stored).toContain(sealedPrefix);
      expect(stored).not.toContain(markerPrefix);

      const answers = JSON.stringify([
        await shown.load(runId),
        await shown.mailbox(runId),
        await shown.readStream!(runId),
      ]);
      expect(answers).not.toContain(sealedPrefix);
      expect(answers).not.toContain(markerPrefix);
      expect(answers).toContain(encryptedText);
    }
    const listed = await shown.list();
    expect(listed.map((record) => hasEncryptedPayloads(record))).toEqual([true, true, true]);
    expect(JSON.stringify(listed)).not.toContain(sealedPrefix);
  });

  it('names the tool and arguments of a held call "(encrypted)", keeping what approving needs', async () => {
    const waiting = (await hideEncryptedPayloads(raw).load(ids.waiting))!.run;
    expect(waiting.wait?.detail).toMatchObject({
      approvals: [
        {
          callId: 'pay',
          argsHash: expect.stringMatching(/^[0-9a-f]{64}$/),
          tool: encryptedText,
          args: encryptedText,
          deadline: null,
        },
      ],
    });
  });

  it('shows an output its definition keeps in plaintext as it is, the rest of the run hidden', async () => {
    const store = memoryStore();
    const writer = protectPayloads(store, { codec, plaintext: { vault: ['output'] } });
    const { completed } = await seedEncryptedRuns(writer);
    const shown = (await hideEncryptedPayloads(store).load(completed))!.run;
    expect(shown.output).toBe((await writer.load(completed))!.run.output);
    expect(JSON.stringify(shown.output)).toContain(markerPrefix);
    expect(JSON.stringify(shown.snapshot)).not.toContain(markerPrefix);
    expect(JSON.stringify(shown)).not.toContain(sealedPrefix);
  });

  it('leaves a plaintext run as it is, not marked encrypted', async () => {
    const plain = memoryStore();
    await plain.create({
      runId: 'plain',
      kind: 'agent',
      name: 'a',
      signature: 's',
      snapshot: { state: { input: 'hello' } },
      status: 'queued',
    });
    const record = (await plain.load('plain'))!.run;
    expect(hasEncryptedPayloads(record)).toBe(false);
    expect(hideRecordPayloads(record).snapshot).toBe(record.snapshot);
    const value = { said: ['a', { b: 1 }] };
    expect(hideSealed(value)).toBe(value);
  });

  it("tells a codec's unreadable payload from rows changed behind the store", () => {
    const error = new PayloadUnreadableError(
      { runId: 'r', kind: 'snapshot', position: '' },
      'rejected',
      'codec "aes-gcm" refused it',
    );
    expect(unreadableCode(error.message)).toBe('PAYLOAD_UNREADABLE');
    expect(unreadableCode('Run "r" has an invalid snapshot: its history is not an array.')).toBe(
      'SNAPSHOT_INVALID',
    );
  });
});
