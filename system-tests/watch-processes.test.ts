import type { RunEvent } from '@cairn/sdk';
import { createClient } from '@cairn/worker';
import { describe, expect, it } from 'vitest';
import { useProcessBackends } from './fixtures/process-backends.js';
import { relayAgent } from './fixtures/waiting-agents.js';

// Watching a run with `client.watch` while the worker holding it is SIGKILLed and another takes it over, on real
// Postgres and Redis: the watcher disconnects at the kill and reconnects with its cursor.
const backends = useProcessBackends('cairn_watch');
const relay = relayAgent(() => undefined);

describe.each(['postgres', 'redis'] as const)('watching a run on %s', (name) => {
  it('across a SIGKILL takeover: the abandoned attempt, then the new one; resumed by cursor, nothing lost or repeated', async () => {
    const backend = await backends.open(name);
    const client = createClient({ store: backend.store });
    // A short lease keeps the test quick: it runs out before the killed holder's takeover grace (3 s) ends.
    const doomed = await backends.worker('doomed', {
      CRASH_AT: 'effect.after@trip-1/tool/hop-2',
      LEASE_MS: '2000',
    });
    const { runId } = await client.start(relay, 'go');

    const beforeKill: RunEvent[] = [];
    const disconnect = new AbortController();
    const watching = (async () => {
      for await (const event of client.watch(runId, { pollMs: 20, signal: disconnect.signal })) {
        beforeKill.push(event);
      }
    })();
    expect((await doomed.exited).signal).toBe('SIGKILL');
    // What the killed worker made durable: its last checkpoint's history. The watcher catches up with it, then
    // disconnects.
    const durable = await client.events(runId);
    while (beforeKill.length < durable.length) await new Promise((r) => setTimeout(r, 20));
    disconnect.abort();
    await watching;
    expect(beforeKill).toEqual(durable);
    expect(beforeKill[0]).toMatchObject({ type: 'attempt.started', owner: 'doomed', epoch: 1 });
    const cursor = beforeKill.at(-1)!.seq;

    await backends.worker('survivor', { LEASE_MS: '2000' });
    const afterReconnect: RunEvent[] = [];
    for await (const event of client.watch(runId, { after: cursor, pollMs: 20 })) {
      afterReconnect.push(event);
    }

    // Together, the two connections saw every event of the run once, in order.
    const all = await client.events(runId);
    expect([...beforeKill, ...afterReconnect]).toEqual(all);
    expect(new Set(all.map((event) => event.seq)).size).toBe(all.length);
    // The new holder first says the killed attempt was abandoned, and where its durable events stopped.
    expect(afterReconnect[0]).toMatchObject({
      type: 'attempt.abandoned',
      owner: 'doomed',
      epoch: 1,
      how: 'taken_over',
      lastSeq: cursor,
    });
    expect(afterReconnect[1]).toMatchObject({
      type: 'attempt.started',
      owner: 'survivor',
      epoch: 2,
      takenFrom: 'doomed',
    });
    // The call in flight at the kill is reported unknown, never run again; the run then completes.
    const hop2 = afterReconnect.find(
      (event) => event.type === 'effect.settled' && event.effectId === 'trip-1/tool/hop-2',
    );
    expect(hop2).toMatchObject({ outcome: 'unknown', name: 'execute_tool relay' });
    expect(afterReconnect.at(-1)).toMatchObject({ type: 'ended', status: 'completed' });
    expect(await client.result(runId)).toBe('relayed three times');
  });

  it('waits for a run that has not started, and throws for an unknown one', async () => {
    const backend = await backends.open(name);
    const client = createClient({ store: backend.store });
    const { runId } = await client.start(relay, 'go');
    const seen: RunEvent[] = [];
    const watching = (async () => {
      for await (const event of client.watch(runId, { pollMs: 20 })) seen.push(event);
    })();
    await backends.worker('w-1');
    await watching;
    expect(seen[0]).toMatchObject({ type: 'attempt.started', owner: 'w-1' });
    expect(seen.at(-1)).toMatchObject({ type: 'ended', status: 'completed' });
    expect(seen.filter((event) => event.type === 'unit.settled')).toHaveLength(4);
    const unknown = client.watch('no-such-run')[Symbol.asyncIterator]().next();
    await expect(unknown).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
  });
});
