import {
  childRunId,
  defineAgent,
  definePlanner,
  defineTool,
  initialRunSnapshot,
  memoryStore,
  type Boundary,
  type JsonValue,
  type ModelRequest,
} from '@cairn/sdk';
import { createFakeClock, scriptedModel, SimulatedCrash, type ScriptedTurn } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { gate, ticks } from './interleave.js';

const firstUserText = (request: ModelRequest) => {
  const first = request.messages.find((m) => m.role === 'user');
  return first?.role === 'user' ? first.content : '';
};

/** A planner whose one node `hotel` hands the goal's city to a child `concierge` agent. */
function trip(options: { onBook?: () => Promise<void> } = {}) {
  const clock = createFakeClock();
  const store = memoryStore({ clock });
  const booked: string[] = [];
  const book = defineTool({
    name: 'book_hotel',
    description: 'Books a hotel.',
    input: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      await options.onBook?.();
      booked.push(city);
      return { booked: `${city} hotel` };
    },
  });
  const conciergeConfig = {
    name: 'concierge',
    model: scriptedModel((request, turn): ScriptedTurn => {
      const city = firstUserText(request).replace('book ', '');
      return turn === 0
        ? { toolCalls: [{ id: 'h1', name: 'book_hotel', args: { city } }] }
        : { text: `${city} hotel booked` };
    }),
    tools: [book],
  };
  const concierge = defineAgent(conciergeConfig);
  // The same agent, called on its own against the planner's store: what a caller choosing run ids reaches.
  const outsider = () => defineAgent({ ...conciergeConfig, durable: { store, clock } });
  const planningModel = scriptedModel((request): ScriptedTurn => {
    const city = /book (\w+)/.exec(firstUserText(request))?.[1] ?? '?';
    const plan = {
      nodes: [{ id: 'hotel', capability: 'concierge', input: `book ${city}`, dependsOn: [] }],
    };
    return { text: JSON.stringify(plan) };
  });
  const planner = (durable: { deleteOnComplete?: boolean } = {}) =>
    definePlanner({
      name: 'trip',
      model: planningModel,
      capabilities: [{ name: 'concierge', description: 'Books hotels.', executable: concierge }],
      durable: { store, clock, leaseMs: 10_000, ...durable },
    });
  return { clock, store, booked, planner, outsider };
}

describe('a child run under a live parent', () => {
  it('cannot be claimed or listed as claimable by anyone else, however long the parent runs', async () => {
    const hold = gate();
    const { clock, store, booked, planner } = trip({ onBook: () => hold.promise });
    const running = planner().execute('book Lisbon', { runId: 'P' });
    await ticks(20);
    // The parent keeps renewing its lease for three lease periods while its child works.
    for (let i = 0; i < 6; i += 1) {
      await clock.advance(5_000);
      await ticks();
    }
    expect(
      await store.acquire(childRunId('P', 'hotel'), { owner: 'intruder', ttlMs: 10_000 }),
    ).toBeUndefined();
    expect(
      await store.claimable({ limit: 10, definitions: [{ kind: 'agent', name: 'concierge' }] }),
    ).toEqual([]);
    hold.open();
    const result = await running;
    expect(result.nodes.map((n) => [n.id, n.status])).toEqual([['hotel', 'completed']]);
    expect(booked).toEqual(['Lisbon']);
  });
});

describe('a run executed again under the same id after it was deleted', () => {
  it('runs its children again instead of reusing the previous run’s child outputs', async () => {
    const { booked, planner } = trip();
    const lisbon = await planner({ deleteOnComplete: true }).execute('book Lisbon', { runId: 'T' });
    expect(lisbon.output).toEqual({ hotel: 'Lisbon hotel booked' });
    const tokyo = await planner({ deleteOnComplete: true }).execute('book Tokyo', { runId: 'T' });
    expect(tokyo.output).toEqual({ hotel: 'Tokyo hotel booked' });
    expect(booked).toEqual(['Lisbon', 'Tokyo']);
  });
});

describe('a child run, from outside its parent', () => {
  it('is refused to execute and resume with INVALID_ARGUMENT: its output and state stay its parent’s', async () => {
    const { store, planner, outsider, booked } = trip();
    await planner().execute('book Lisbon', { runId: 'victim' });
    const childId = childRunId('victim', 'hotel');
    const child = (await store.load(childId))?.run;
    expect(child).toMatchObject({ status: 'completed', rootRunId: 'victim' });
    await expect(outsider().execute('book Paris', { runId: childId })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/reserved for the child runs/),
    });
    await expect(outsider().resume(childId)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/child run of "victim"/),
    });
    expect(booked).toEqual(['Lisbon']);
    expect((await store.load(childId))?.run).toEqual(child);
  });

  it('cannot be created ahead of its parent: the reserved id is refused before any store sees it', async () => {
    const { store, planner, outsider, booked } = trip();
    await expect(
      outsider().execute('book Paris', { runId: childRunId('victim', 'hotel') }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await store.list()).toEqual([]);
    const result = await planner().execute('book Lisbon', { runId: 'victim' });
    expect(result.output).toEqual({ hotel: 'Lisbon hotel booked' });
    expect(booked).toEqual(['Lisbon']);
  });
});

describe('a run a caller created first, under the id a planner node would once give its child', () => {
  it('stays the caller’s: the planner’s node runs its own child, and neither run touches the other', async () => {
    const { store, planner, outsider, booked } = trip();
    const squatter = await outsider().execute('book Paris', { runId: 'victim/hotel' });
    expect(squatter.output).toBe('Paris hotel booked');

    const result = await planner().execute('book Lisbon', { runId: 'victim' });
    expect(result.output).toEqual({ hotel: 'Lisbon hotel booked' });
    expect(result.nodes.map((n) => [n.id, n.status])).toEqual([['hotel', 'completed']]);
    expect(booked).toEqual(['Paris', 'Lisbon']);
    expect((await store.load('victim/hotel'))?.run).toMatchObject({
      status: 'completed',
      output: 'Paris hotel booked',
      rootRunId: null,
      parent: null,
    });
  });
});

describe('a planner run an earlier version started, with its child in flight at a crash', () => {
  it('continues the child under the id that version gave it: the settled booking is not made again', async () => {
    const { clock, store, planner, booked } = trip();
    const definition = planner().definition;
    // The state an earlier version wrote: no `childRunIds`, so its children live at `${runId}/${nodeId}`.
    const snapshot = initialRunSnapshot(definition, 'book Lisbon', 'old') as {
      state: Record<string, JsonValue>;
    };
    delete snapshot.state.childRunIds;
    await store.create({
      runId: 'old',
      kind: 'planner',
      name: 'trip',
      signature: definition.signature,
      status: 'queued',
      snapshot: snapshot as unknown as JsonValue,
    });
    // The child's booking settles and is journaled; the process dies before the child's next model call.
    const crash = (b: Boundary) => {
      if (b.runId === 'old/hotel' && b.point === 'checkpoint.after' && booked.length > 0)
        throw new SimulatedCrash(b);
    };
    await expect(planner().resume('old', { onBoundary: crash })).rejects.toBeInstanceOf(
      SimulatedCrash,
    );
    expect(booked).toEqual(['Lisbon']);

    await clock.advance(10_000); // the crashed process's lease runs out
    const result = await planner().resume('old');
    expect(result.output).toEqual({ hotel: 'Lisbon hotel booked' });
    expect(booked).toEqual(['Lisbon']);
    expect(result.nodes[0]?.child?.runId).toBe('old/hotel');
    expect(await store.load(childRunId('old', 'hotel'))).toBeUndefined();
  });
});
