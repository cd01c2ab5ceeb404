import {
  defineAgent,
  defineTool,
  memoryStore,
  runEvents,
  type AgentResult,
  type Clock,
  pendingApprovals,
  RunWaitingError,
  type DurableStore,
  type RunEvent,
} from '@cairn/sdk';
import {
  createFakeClock,
  exploreCrashes,
  observeAgent,
  scriptedModel,
  SimulatedCrash,
  type ScriptedTurn,
} from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

// Two trips of a lookup (idempotent) and a charge (not), then an answer.
const script: ScriptedTurn[] = [
  {
    toolCalls: [
      { id: 'lookup-1', name: 'lookup', args: { sku: 'A' } },
      { id: 'charge-1', name: 'charge', args: { cents: 100 } },
    ],
    usage: { inputTokens: 11, outputTokens: 3 },
  },
  {
    toolCalls: [{ id: 'charge-2', name: 'charge', args: { cents: 200 } }],
    usage: { inputTokens: 13, outputTokens: 5 },
  },
  { text: 'done', usage: { inputTokens: 17, outputTokens: 7 } },
];

function shop(store: DurableStore, clock: Clock = createFakeClock(), owner?: string) {
  const sideEffects: Record<string, number> = {};
  const model = scriptedModel(script);
  const tool = (name: string, idempotent: boolean) =>
    defineTool({
      name,
      description: name,
      input: z.object({ sku: z.string().optional(), cents: z.number().optional() }),
      idempotent,
      execute: async (_args, ctx) => {
        sideEffects[ctx.toolCallId] = (sideEffects[ctx.toolCallId] ?? 0) + 1;
        return { ok: true };
      },
    });
  const agent = defineAgent({
    name: 'shop',
    model,
    tools: [tool('lookup', true), tool('charge', false)],
    maxTrips: 5,
    durable: { store, clock, leaseMs: 30_000, ...(owner === undefined ? {} : { owner }) },
  });
  return { agent, model, sideEffects, clock };
}

/** What an operator reading a run's history must always be able to rely on. */
function checkHistory(events: RunEvent[]): string[] {
  const problems: string[] = [];
  for (let i = 1; i < events.length; i += 1) {
    if (events[i]!.seq <= events[i - 1]!.seq) problems.push(`seq ${events[i]!.seq} does not rise`);
  }
  const ends = events.filter((event) => event.type === 'ended');
  if (ends.length !== 1 || events.at(-1)?.type !== 'ended')
    problems.push('not exactly one end, last');
  const settled = new Map<string, number>();
  for (const event of events) {
    if (event.type !== 'effect.settled') continue;
    settled.set(event.effectId, (settled.get(event.effectId) ?? 0) + 1);
  }
  for (const [id, n] of settled) if (n > 1) problems.push(`${id} settled ${n} times`);
  // Every attempt after the first follows the end of the one before: a wait, or an abandonment.
  for (const [index, event] of events.entries()) {
    if (event.type !== 'attempt.started' || index === 0) continue;
    const before = events[index - 1]!.type;
    if (before !== 'waiting' && before !== 'attempt.abandoned') {
      problems.push(`attempt ${event.epoch} follows ${before}`);
    }
  }
  return problems;
}

const usageOf = (events: RunEvent[]) =>
  events.reduce(
    (sum, event) =>
      event.type === 'effect.settled' && event.usage !== undefined
        ? {
            inputTokens: sum.inputTokens + event.usage.inputTokens,
            outputTokens: sum.outputTokens + event.usage.outputTokens,
          }
        : sum,
    { inputTokens: 0, outputTokens: 0 },
  );

describe("a run's history", () => {
  it('tells attempts, trips, tool calls with their outcome, usage and the end of an uninterrupted run', async () => {
    const store = memoryStore();
    const { agent } = shop(store);
    await agent.execute('buy', { runId: 'calm' });
    const events = runEvents((await store.load('calm'))!.run);
    expect(checkHistory(events)).toEqual([]);
    expect(events.map((event) => event.type)).toEqual([
      'attempt.started',
      ...['unit.started', 'effect.started', 'effect.settled'],
      ...['effect.started', 'effect.started', 'effect.settled', 'effect.settled', 'unit.settled'],
      ...['unit.started', 'effect.started', 'effect.settled', 'effect.started', 'effect.settled'],
      'unit.settled',
      ...['unit.started', 'effect.started', 'effect.settled', 'unit.settled'],
      'ended',
    ]);
    const tools = events.flatMap((event) =>
      event.type === 'effect.settled' && event.kind === 'tool'
        ? [[event.effectId, event.outcome]]
        : [],
    );
    expect(tools).toEqual([
      ['trip-0/tool/lookup-1', 'ok'],
      ['trip-0/tool/charge-1', 'ok'],
      ['trip-1/tool/charge-2', 'ok'],
    ]);
    expect(usageOf(events)).toEqual({ inputTokens: 41, outputTokens: 15 });
    expect(events[0]).toMatchObject({ type: 'attempt.started', epoch: 1, takenFrom: null });
    expect(events.at(-1)).toMatchObject({ type: 'ended', status: 'completed' });
    // Resumable from any cursor: what follows a seq is exactly the rest.
    for (const event of events) {
      expect(runEvents((await store.load('calm'))!.run, event.seq)).toEqual(
        events.filter((later) => later.seq > event.seq),
      );
    }
  });

  it('marks a takeover: the crashed attempt abandoned, the tool in flight outcome unknown', async () => {
    const clock = createFakeClock();
    const store = memoryStore({ clock });
    const first = shop(store, clock, 'worker-a');
    const crash = first.agent.execute('buy', {
      runId: 'crashed',
      onBoundary: (boundary) => {
        if (boundary.point === 'effect.before' && boundary.effectId === 'trip-1/tool/charge-2') {
          throw new SimulatedCrash(boundary);
        }
      },
    });
    await expect(crash).rejects.toBeInstanceOf(SimulatedCrash);
    const durableBefore = runEvents((await store.load('crashed'))!.run);
    await clock.advance(30_001);
    await shop(store, clock, 'worker-b').agent.resume('crashed');
    const events = runEvents((await store.load('crashed'))!.run);
    expect(checkHistory(events)).toEqual([]);
    // What a watcher saw before the crash is still there, unchanged, before the takeover.
    expect(events.slice(0, durableBefore.length)).toEqual(durableBefore);
    const abandoned = events.find((event) => event.type === 'attempt.abandoned');
    expect(abandoned).toMatchObject({
      epoch: 1,
      owner: 'worker-a',
      how: 'taken_over',
      lastSeq: Math.max(...durableBefore.map((event) => event.seq)),
    });
    expect(events.filter((event) => event.type === 'attempt.started')).toMatchObject([
      { epoch: 1, owner: 'worker-a', takenFrom: null },
      { epoch: 2, owner: 'worker-b', takenFrom: 'worker-a' },
    ]);
    expect(
      events.find((e) => e.type === 'effect.settled' && e.effectId === 'trip-1/tool/charge-2'),
    ).toMatchObject({
      outcome: 'unknown',
      name: 'execute_tool charge',
      unit: 'trip-1',
    });
  });

  it('at every crash boundary: one end, rising seqs, unknown exactly where the model was told, usage once', async () => {
    const stores: DurableStore[] = [];
    const report = await exploreCrashes<string, AgentResult<unknown>>({
      input: 'buy',
      store: (clock) => {
        const store = memoryStore({ clock });
        stores.push(store);
        return store;
      },
      setup() {
        const worlds: Array<ReturnType<typeof shop>> = [];
        return {
          create: (store, clock) => {
            const world = shop(store, clock);
            worlds.push(world);
            return world.agent;
          },
          sideEffects: () =>
            worlds.reduce<Record<string, number>>((all, world) => {
              for (const [key, n] of Object.entries(world.sideEffects))
                all[key] = (all[key] ?? 0) + n;
              return all;
            }, {}),
        };
      },
      observe: observeAgent,
      idempotent: (key) => key.startsWith('lookup'),
    });
    expect(report.violations).toEqual([]);
    expect(stores.length).toBeGreaterThan(10);
    for (const [index, store] of stores.entries()) {
      const record = (await store.load('crash-harness-run'))!.run;
      const events = runEvents(record);
      const crashCase = report.cases[index - 1];
      expect(checkHistory(events), `case ${index}`).toEqual([]);
      const unknown = events.flatMap((event) =>
        event.type === 'effect.settled' && event.outcome === 'unknown'
          ? [event.effectId.split('/').at(-1)]
          : [],
      );
      expect(unknown.sort(), `case ${index}`).toEqual([...(crashCase?.unknown ?? [])].sort());
      expect(usageOf(events), `case ${index}`).toEqual({ inputTokens: 41, outputTokens: 15 });
    }
  });

  it('keeps a trip that waits for an approval open across the wait: it settles in the attempt that ran the call', async () => {
    const store = memoryStore();
    const agent = defineAgent({
      name: 'approver',
      model: scriptedModel([
        { toolCalls: [{ id: 'c-1', name: 'charge', args: { cents: 5 } }] },
        { text: 'charged' },
      ]),
      tools: [
        defineTool({
          name: 'charge',
          description: 'Charges.',
          input: z.object({ cents: z.number() }),
          execute: async () => 'ok',
        }),
      ],
      approval: { tools: { charge: true } },
      durable: { store },
    });
    await expect(agent.execute('go', { runId: 'held' })).rejects.toBeInstanceOf(RunWaitingError);
    const { argsHash } = pendingApprovals((await store.load('held'))!.run.wait?.detail)[0]!;
    await agent.approve('held', 'c-1', { argsHash });
    await agent.resume('held');
    const events = runEvents((await store.load('held'))!.run);
    expect(checkHistory(events)).toEqual([]);
    const story = events.flatMap((event) =>
      event.type === 'unit.settled'
        ? [`settled ${event.unit}`]
        : event.type === 'effect.settled'
          ? [`${event.effectId} ${event.outcome}`]
          : ['waiting', 'signals', 'attempt.started', 'attempt.abandoned', 'ended'].includes(
                event.type,
              )
            ? [event.type]
            : [],
    );
    expect(story).toEqual([
      'attempt.started',
      'trip-0/model ok',
      'waiting',
      'attempt.started',
      'signals',
      'trip-0/tool/c-1 ok',
      'settled trip-0',
      'trip-1/model ok',
      'settled trip-1',
      'ended',
    ]);
  });

  it('stays bounded on a long run, and says what it dropped', async () => {
    const store = memoryStore();
    const trips = 250;
    const agent = defineAgent({
      name: 'long',
      model: scriptedModel((_request, turn) =>
        turn < trips
          ? { toolCalls: [{ id: `t${turn}`, name: 'noop', args: {} }] }
          : { text: 'done' },
      ),
      tools: [
        defineTool({
          name: 'noop',
          description: 'Does nothing.',
          input: z.object({}),
          execute: async () => 'ok',
        }),
      ],
      maxTrips: trips + 1,
      durable: { store },
    });
    await agent.execute('go', { runId: 'long' });
    const record = (await store.load('long'))!.run;
    const history = (record.snapshot as { history: { records: unknown[] } }).history;
    expect(history.records.length).toBeLessThanOrEqual(600);
    const events = runEvents(record);
    // The attempt is kept; the oldest trips are not, and the history says up to where.
    expect(events[0]).toMatchObject({ type: 'attempt.started', seq: 1 });
    const truncated = events.find((event) => event.type === 'history.truncated')!;
    expect(truncated.seq).toBeGreaterThan(1);
    expect(events.filter((event) => event.type === 'unit.settled').length).toBeLessThan(trips);
    expect(events.at(-1)).toMatchObject({ type: 'ended', status: 'completed' });
    // A watcher already past what was dropped is not told about it.
    expect(runEvents(record, truncated.seq).map((event) => event.type)).not.toContain(
      'history.truncated',
    );
  });

  it('reads a malformed history as truncated, and the run goes on', async () => {
    const clock = createFakeClock();
    const store = memoryStore({ clock });
    const crash = shop(store, clock).agent.execute('buy', {
      runId: 'odd',
      onBoundary: (boundary) => {
        if (boundary.point === 'effect.before' && boundary.effectId === 'trip-1/tool/charge-2') {
          throw new SimulatedCrash(boundary);
        }
      },
    });
    await expect(crash).rejects.toBeInstanceOf(SimulatedCrash);
    await clock.advance(30_001);
    // Someone (a bug, a hand-edit) breaks the stored history; the checkpoint is otherwise intact.
    const { run } = (await store.load('odd'))!;
    const lease = (await store.acquire('odd', { owner: 'editor', ttlMs: 1_000 }))!;
    const snapshot = run.snapshot as { journalSeq: number };
    await store.save(lease, {
      status: 'running',
      signature: run.signature,
      snapshot: { ...snapshot, history: { v: 1, records: [{ t: 'nope', s: 'x' }] } },
      journalSeq: snapshot.journalSeq,
      release: true,
    });
    await clock.advance(1_001);
    const result = await shop(store, clock).agent.resume('odd');
    expect(result.output).toBe('done');
    const events = runEvents((await store.load('odd'))!.run);
    const { journalSeq } = snapshot;
    expect(events[0]).toEqual({ seq: journalSeq, at: 0, type: 'history.truncated' });
    expect(events[1]).toMatchObject({ type: 'attempt.started', owner: expect.any(String) });
    expect(events[1]!.seq).toBeGreaterThan(journalSeq);
    expect(events.at(-1)).toMatchObject({ type: 'ended', status: 'completed' });
    expect(runEvents({ snapshot: { journalSeq: 7, history: 'garbage' } })).toEqual([
      { seq: 7, at: 0, type: 'history.truncated' },
    ]);
  });
});
