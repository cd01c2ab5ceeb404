/**
 * The commands that change runs (signal, approve, reject, resume, cancel, discard), in order, on the store
 * `describeCairnCommands` seeded: what they print, their exit codes and their `--json` shapes.
 */
import { createClient } from '@cairn/worker';
import { expect, it } from 'vitest';
import { travelAgent, type Scenarios } from './fixtures/scenarios.js';
import { json, moduleFixture, startCairn, type CairnResult, type SuiteStore } from './support.js';

/** What the steering tests work with, once the seeding `beforeAll` has run. */
export interface SteeringContext {
  suite: SuiteStore;
  ids: Scenarios;
  run(args: string[]): Promise<CairnResult>;
}

export function describeSteering(context: () => SteeringContext): void {
  it('signals, rejects an unknown call (exit 4), and approves the held call', async () => {
    const { ids, run } = context();
    const sent = await run([
      'runs',
      'signal',
      ids.waiting,
      'nudge',
      '--payload',
      '{"n":1}',
      '--key',
      'k1',
      '--json',
    ]);
    expect(sent.code).toBe(0);
    expect(json(sent.stdout)).toMatchObject({
      runId: ids.waiting,
      signal: 'nudge',
      duplicate: false,
    });
    const again = await run(['runs', 'signal', ids.waiting, 'nudge', '--key', 'k1']);
    expect(again.stdout).toMatch(/already sent before/);
    const ended = await run(['runs', 'signal', ids.completed, 'nudge']);
    expect([ended.code, ended.stderr]).toEqual([4, expect.stringMatching(/^error RUN_ENDED: /)]);

    const rejected = await run(['runs', 'reject', ids.waiting, 'no-such-call', '--reason', 'no']);
    expect([rejected.code, rejected.stderr]).toEqual([
      4,
      expect.stringMatching(/^error INVALID_ARGUMENT: /),
    ]);
    const early = await run(['runs', 'resume', ids.waiting]);
    expect([early.code, early.stderr]).toEqual([
      4,
      expect.stringMatching(/^error RUN_WAITING: .*approval of send_email \(call email\)/),
    ]);
    const approved = await run(['runs', 'approve', ids.waiting, 'email', '--by', 'ada@ops']);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toMatch(`Approved tool call email of run ${ids.waiting}`);
    // The decision is recorded as the operator's, not the tool's.
    const decision = (await context().suite.store.mailbox(ids.waiting)).find(
      (signal) => signal.name === 'cairn.approval',
    );
    expect(decision?.payload).toMatchObject({ callId: 'email', approved: true, by: 'ada@ops' });
    // The wait is due now: no worker holds it, any worker with the definition continues it.
    const resumed = await run(['runs', 'resume', ids.waiting, '--json']);
    expect([resumed.code, json(resumed.stdout)]).toEqual([
      0,
      { runId: ids.waiting, outcome: 'claimable', status: 'waiting' },
    ]);
  });

  it('resumes: refuses ended, child and held runs; performs a queued run with --module', async () => {
    const { suite, ids, run } = context();
    const ended = await run(['runs', 'resume', ids.completed]);
    expect([ended.code, ended.stderr]).toEqual([4, expect.stringMatching(/^error RUN_ENDED: /)]);
    const child = await run(['runs', 'resume', ids.child, '--json']);
    expect(child.code).toBe(4);
    expect(json<{ error: { code: string } }>(child.stderr).error.code).toBe('INVALID_ARGUMENT');

    const claimable = await run(['runs', 'resume', ids.queued]);
    expect(claimable.code).toBe(0);
    expect(claimable.stdout).toMatch(
      /is claimable: .*any worker with agent "travel" will claim it/,
    );

    const performed = await run([
      'runs',
      'resume',
      ids.queued,
      '--module',
      moduleFixture,
      '--json',
    ]);
    expect([performed.code, performed.stderr]).toEqual([0, '']);
    expect(json(performed.stdout)).toEqual({
      runId: ids.queued,
      outcome: 'completed',
      status: 'completed',
      output: 'Booked CA985 and emailed Ada.',
    });

    const held = 'run-held';
    const client = createClient({ store: suite.store });
    await client.start(travelAgent(suite.store, 'x'), 'Hold me', { runId: held });
    const lease = await suite.store.acquire(held, { owner: 'worker-live', ttlMs: 60_000 });
    try {
      const shown = await run(['runs', 'show', held]);
      expect(shown.stdout).toMatch(/^holder\s+worker-live \(alive\)$/m);
      expect(shown.stdout).toMatch(/^lease until\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/m);
      const refused = await run(['runs', 'resume', held]);
      expect([refused.code, refused.stderr]).toEqual([
        4,
        expect.stringMatching(/^error LEASE_HELD: .*worker-live/),
      ]);
      const kept = await run(['runs', 'discard', held]);
      expect([kept.code, kept.stderr]).toEqual([4, expect.stringMatching(/^error LEASE_HELD: /)]);
      const requested = await run(['runs', 'cancel', held, '--json']);
      expect([requested.code, json(requested.stdout)]).toEqual([
        0,
        { runId: held, cancel: 'requested' },
      ]);
    } finally {
      await suite.store.release(lease!);
    }

    // A worker whose process dies holds nothing, whatever its lease says: within a second, not at its end.
    const dying = suite.another();
    await dying.acquire(held, { owner: 'worker-killed', ttlMs: 60_000 });
    expect((await run(['runs', 'show', held])).stdout).toMatch(
      /^holder\s+worker-killed \(alive\)$/m,
    );
    await dying.close();
    await expect
      .poll(async () => (await run(['runs', 'show', held])).stdout, { timeout: 10_000 })
      .toMatch(/^holder\s+worker-killed \(gone: its process died\)$/m);
    const shownJson = json<{ run: { held: boolean; holderGone: boolean } }>(
      (await run(['runs', 'show', held, '--json'])).stdout,
    );
    expect(shownJson.run).toMatchObject({ held: false, holderGone: true });
  });

  it('hands a run it performs over on Ctrl-C: exit 130, the call in flight written, the run claimable', async () => {
    const { suite } = context();
    const client = createClient({ store: suite.store });
    await client.start({ kind: 'agent', name: 'slow' }, 'Rest', { runId: 'run-slow' });
    const napStarted = async () =>
      (await suite.store.load('run-slow'))?.journal.some(
        (entry) => entry.type === 'started' && entry.effectId.includes('nap'),
      ) === true;
    const resuming = startCairn(
      ['runs', 'resume', 'run-slow', '--module', moduleFixture, '--json'],
      suite.env,
    );
    // Interrupted while its tool call is in flight: the journal has its start.
    await expect
      .poll(napStarted, {
        timeout: 20_000,
        interval: 50,
      })
      .toBe(true);
    resuming.kill('SIGINT');
    const { code, stdout } = await resuming.exited;
    expect([code, json(stdout)]).toEqual([
      130,
      { runId: 'run-slow', outcome: 'released', status: 'running' },
    ]);
    const after = await client.get('run-slow');
    expect(after).toMatchObject({
      held: false,
      status: expect.not.stringMatching(/cancelled|failed/),
    });
    const events = await client.events('run-slow');
    expect(
      events.filter((event) => event.type === 'effect.settled' && event.name.includes('nap')),
    ).toMatchObject([{ outcome: 'ok' }]);
  });

  it('cancels and discards through the command, with their exit codes', async () => {
    const { suite, ids, run } = context();
    const client = createClient({ store: suite.store });
    await client.start(travelAgent(suite.store, 'x'), 'Cancel me', { runId: 'run-to-cancel' });
    const cancelled = await run(['runs', 'cancel', 'run-to-cancel']);
    expect([cancelled.code, cancelled.stdout]).toEqual([0, 'Cancelled run run-to-cancel.\n']);
    const again = await run(['runs', 'cancel', 'run-to-cancel']);
    expect([again.code, again.stderr]).toEqual([
      4,
      expect.stringMatching(/^error RUN_ENDED: .*cancelled/),
    ]);

    const child = await run(['runs', 'discard', ids.child]);
    expect([child.code, child.stderr]).toEqual([
      4,
      expect.stringMatching(/^error INVALID_ARGUMENT: /),
    ]);
    const discarded = await run(['runs', 'discard', ids.failed, '--json']);
    expect([discarded.code, json(discarded.stdout)]).toEqual([
      0,
      { runId: ids.failed, discarded: true },
    ]);
    const gone = await run(['runs', 'discard', ids.failed]);
    expect(gone.code).toBe(3);
  });
}
