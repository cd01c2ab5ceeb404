import { randomBytes } from 'node:crypto';
import { aesGcmCodec, deflateCodec, protectPayloads } from '@cairn/sdk';
import { createClient } from '@cairn/worker';
import { describe, expect, it } from 'vitest';
import { effectsOf, useProcessBackends } from './fixtures/process-backends.js';
import { relayAgent } from './fixtures/waiting-agents.js';

// Worker processes that share a payload codec: one SIGKILLed mid-run, another takes the run over and reads what
// the first one encoded (its conversation groups, its journal), on Postgres and on Redis.
const backends = useProcessBackends('cairn_codec_processes');
const relay = relayAgent(() => undefined);
const tenMinutes = String(10 * 60_000);

describe.each(['postgres', 'redis'] as const)(
  'worker processes with a payload codec on %s',
  (name) => {
    it('take over a killed one’s run and finish it, nothing settled run again, nothing stored in plaintext', async () => {
      const backend = await backends.open(name);
      const key = randomBytes(32).toString('base64');
      const codec = [deflateCodec(), aesGcmCodec({ keys: { k1: key }, current: 'k1' })];
      const client = createClient({ store: protectPayloads(backend.store, { codec }) });
      const doomed = await backends.worker('doomed', {
        CRASH_AT: 'effect.after@trip-1/tool/hop-2',
        LEASE_MS: tenMinutes,
        PAYLOAD_KEY: key,
      });
      const { runId } = await client.start(relay, 'relay the secret word: pelican');
      expect((await doomed.exited).signal).toBe('SIGKILL');

      const survivor = await backends.worker('survivor', {
        LEASE_MS: tenMinutes,
        PAYLOAD_KEY: key,
      });
      expect(await client.result(runId, { pollMs: 50 })).toBe('relayed three times');
      expect(survivor.linesOf('event', 'claimed')[0]).toMatchObject({ runId, takenFrom: 'doomed' });
      expect(effectsOf([doomed, survivor], runId)).toEqual(['hop-1', 'hop-2', 'hop-3']);

      // As stored: the input, the conversation and the output encoded.
      const stored = JSON.stringify(await backend.store.load(runId));
      expect(stored).toContain('cairn:1:deflate+aes-gcm@k1:');
      expect(stored).not.toContain('pelican');
      expect(stored).not.toContain('relayed three times');
    });
  },
);
