import { createClient } from '@cairn/worker';
import { describe, expect, it } from 'vitest';
import { effectsOf, useProcessBackends } from './fixtures/process-backends.js';
import { relayAgent } from './fixtures/waiting-agents.js';

// Issue 32, item 4: a worker process SIGKILLed mid-run, on Postgres and on Redis. Its leases last ten minutes, far
// past this test's timeout: the run can only complete because another worker took it over once the dead one's
// liveness had been gone for the takeover grace.
const backends = useProcessBackends('cairn_takeover');
const relay = relayAgent(() => undefined);
const tenMinutes = String(10 * 60_000);

describe.each(['postgres', 'redis'] as const)('a worker process SIGKILLed on %s', (name) => {
  it('has its run continued by another long before its lease would end: one recovery, nothing settled run again', async () => {
    const backend = await backends.open(name);
    const client = createClient({ store: backend.store });
    const doomed = await backends.worker('doomed', {
      CRASH_AT: 'effect.after@trip-1/tool/hop-2',
      LEASE_MS: tenMinutes,
    });
    const { runId } = await client.start(relay, 'go');
    expect((await doomed.exited).signal).toBe('SIGKILL');
    const held = (await client.get(runId))!;
    expect(held).toMatchObject({ owner: 'doomed', epoch: 1 });

    const survivor = await backends.worker('survivor', { LEASE_MS: tenMinutes });
    expect(await client.result(runId, { pollMs: 50 })).toBe('relayed three times');
    expect(survivor.linesOf('event', 'claimed')[0]).toMatchObject({
      runId,
      takenFrom: 'doomed',
      epoch: 2,
    });
    expect((await client.get(runId))!).toMatchObject({ status: 'completed', recoveries: 1 });
    // hop-2 ran before the kill and is reported unknown, not run again.
    expect(effectsOf([doomed, survivor], runId)).toEqual(['hop-1', 'hop-2', 'hop-3']);
  });
});
