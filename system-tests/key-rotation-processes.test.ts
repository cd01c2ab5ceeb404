import { randomBytes } from 'node:crypto';
import { aesGcmCodec, deflateCodec, protectPayloads } from '@cairn/sdk';
import { createClient } from '@cairn/worker';
import { describe, expect, it } from 'vitest';
import { useProcessBackends } from './fixtures/process-backends.js';
import { relayAgent } from './fixtures/waiting-agents.js';

// Issue 34: a key rotated while runs are in flight, as a deploy rolls it out: first every process gets the new key
// to read with, then new processes write with it while the old ones hand their runs over, and the stored rows are
// re-encrypted while the new processes run. Nothing fails, runs begun under the old key finish under the new one,
// and once a pass after the runs end moves what their holders wrote over, the old key can go: every row is read
// with the new key alone.
const backends = useProcessBackends('cairn_key_rotation');
const relay = relayAgent(() => undefined);

describe.each(['postgres', 'redis'] as const)('rotating the payload key on %s', (name) => {
  it('with 200 runs in flight: none fails, rows are re-encrypted under them, and the old key can then go', async () => {
    const backend = await backends.open(name);
    const k1 = randomBytes(32).toString('base64');
    const k2 = randomBytes(32).toString('base64');
    const both = [deflateCodec(), aesGcmCodec({ keys: { k1, k2 }, current: 'k2' })];
    const client = createClient({ store: protectPayloads(backend.store, { codec: both }) });
    // Each run outlasts a worker's start on a loaded machine, so the old processes still hold runs to hand over.
    const common = { RELAY_MS: '2000', CONCURRENCY: '100', LEASE_MS: '5000' };
    // Step 1: the processes write with k1 (and can already read k2).
    const before = await Promise.all(
      ['old-1', 'old-2'].map((owner) =>
        backends.worker(owner, {
          ...common,
          PAYLOAD_KEYS: JSON.stringify({ k1, k2 }),
          PAYLOAD_CURRENT: 'k1',
        }),
      ),
    );
    const runIds: string[] = [];
    for (let i = 0; i < 200; i += 1) runIds.push((await client.start(relay, `note ${i}`)).runId);
    const claimed = () => before.flatMap((w) => w.linesOf('event', 'claimed')).length;
    for (let i = 0; i < 200 && claimed() < 100; i += 1) await new Promise((r) => setTimeout(r, 25));

    // Step 2: new processes write with k2; the old ones hand their runs over.
    const after = await Promise.all(
      ['new-1', 'new-2'].map((owner) =>
        backends.worker(owner, {
          ...common,
          PAYLOAD_KEYS: JSON.stringify({ k1, k2 }),
          PAYLOAD_CURRENT: 'k2',
        }),
      ),
    );
    for (const worker of before) worker.kill('SIGTERM');
    await Promise.all(before.map((worker) => worker.exited));
    // The rows move to k2 while the new processes go on with the runs.
    const during = await client.reencrypt();
    expect(during).toMatchObject({ unreadable: [], complete: true });
    expect(during.runs).toBeGreaterThanOrEqual(200);

    for (const runId of runIds) {
      expect(await client.result(runId, { pollMs: 50, timeoutMs: 60_000 })).toBe(
        'relayed three times',
      );
    }
    // The runs the new processes took up were read as the old ones left them (under k1) and written on under
    // k2; any the old processes finished stay under k1, read above all the same.
    const continued = new Set(
      after.flatMap((w) => w.linesOf('event', 'claimed')).map((line) => String(line.runId)),
    );
    expect(continued.size).toBeGreaterThan(0);
    // A pass once they ended moves what their holders wrote over during the first; then nothing is left on k1.
    const afterwards = await client.reencrypt();
    expect(afterwards).toMatchObject({ unreadable: [], complete: true });
    const only2 = createClient({
      store: protectPayloads(backend.store, {
        codec: [deflateCodec(), aesGcmCodec({ keys: { k2 }, current: 'k2' })],
      }),
    });
    for (const runId of runIds) {
      const stored = JSON.stringify([
        await backend.store.load(runId),
        await backend.store.signalPayloads!(runId),
        await backend.store.readStream!(runId),
      ]);
      expect(stored).not.toContain('aes-gcm@k1:');
      expect(stored).toContain('aes-gcm@k2:');
      expect(await only2.result(runId)).toBe('relayed three times');
    }
    expect(await only2.reencrypt()).toMatchObject({ payloads: 0, unreadable: [] });
  });
});
