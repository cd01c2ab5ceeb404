import {
  childRunId,
  defineAgent,
  definePlanner,
  defineTool,
  type Boundary,
  type PlannerResult,
} from '@cairn/sdk';
import { exploreCrashes, observePlanner, scriptedModel, type ScriptedTurn } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

// Five nodes in three waves (maxParallel 2): [weather, flights], [hotel (an agent), budget], [summary].
const plan = {
  nodes: [
    { id: 'weather', capability: 'weather', input: { city: 'Lisbon' }, dependsOn: [] },
    { id: 'flights', capability: 'flights', input: { city: 'Lisbon' }, dependsOn: [] },
    {
      id: 'hotel',
      capability: 'concierge',
      input: { task: 'Find and book a hotel in Lisbon', forecast: { $ref: 'weather.forecast' } },
      dependsOn: ['weather'],
    },
    {
      id: 'budget',
      capability: 'budget',
      input: { flight: { $ref: 'flights.price' }, nights: 3 },
      dependsOn: ['flights'],
    },
    {
      id: 'summary',
      capability: 'summarize',
      input: {
        forecast: { $ref: 'weather.forecast' },
        hotel: { $ref: 'hotel.hotel' },
        total: { $ref: 'budget.total' },
      },
      dependsOn: ['weather', 'hotel', 'budget'],
    },
  ],
  output: { summary: { $ref: 'summary' }, bookingId: { $ref: 'hotel.bookingId' } },
};

// The concierge agent: three trips, two of them with tool calls (one booking has a side effect).
const conciergeScript: ScriptedTurn[] = [
  {
    toolCalls: [{ id: 'search-1', name: 'searchHotels', args: { city: 'Lisbon' } }],
    usage: { inputTokens: 11, outputTokens: 3 },
  },
  {
    toolCalls: [
      { id: 'book-1', name: 'bookHotel', args: { hotel: 'Casa Azul', nights: 3 } },
      { id: 'search-2', name: 'searchHotels', args: { city: 'Sintra' } },
    ],
    usage: { inputTokens: 13, outputTokens: 5 },
  },
  { text: '{"hotel":"Casa Azul","bookingId":"bk-7"}', usage: { inputTokens: 17, outputTokens: 7 } },
];

function tripWorld() {
  const sideEffects: Record<string, number> = {};
  const record = (key: string) => {
    sideEffects[key] = (sideEffects[key] ?? 0) + 1;
  };
  const planningModel = scriptedModel(
    [{ text: JSON.stringify(plan), usage: { inputTokens: 40, outputTokens: 25 } }],
    { name: 'planning' },
  );
  const conciergeModel = scriptedModel(conciergeScript, { name: 'concierge' });
  const concierge = defineAgent({
    name: 'concierge',
    model: conciergeModel,
    tools: [
      defineTool({
        name: 'searchHotels',
        description: 'Hotels in a city.',
        input: z.object({ city: z.string() }),
        idempotent: true,
        execute: ({ city }, ctx) => {
          record(ctx.toolCallId);
          return [{ hotel: 'Casa Azul', city }];
        },
      }),
      defineTool({
        name: 'bookHotel',
        description: 'Book a hotel.',
        input: z.object({ hotel: z.string(), nights: z.number().int() }),
        execute: ({ hotel }, ctx) => {
          record(ctx.toolCallId);
          return { hotel, bookingId: 'bk-7' };
        },
      }),
    ],
    output: z.object({ hotel: z.string(), bookingId: z.string() }),
  });
  const lookup = <Schema extends z.ZodType, Result>(
    name: string,
    input: Schema,
    execute: (args: z.output<Schema>) => Result,
  ) =>
    defineTool({
      name,
      description: name,
      input,
      idempotent: true,
      execute: (args, ctx) => {
        record(ctx.toolCallId);
        return execute(args);
      },
    });
  const capabilities = [
    {
      name: 'weather',
      description: 'The forecast for a city.',
      executable: lookup('weather', z.object({ city: z.string() }), ({ city }) => ({
        city,
        forecast: 'sunny, 24°C',
      })),
    },
    {
      name: 'flights',
      description: 'The cheapest flight to a city.',
      executable: lookup('flights', z.object({ city: z.string() }), () => ({
        flight: 'TP 1351',
        price: 180,
      })),
    },
    { name: 'concierge', description: 'Finds and books a hotel.', executable: concierge },
    {
      name: 'budget',
      description: 'Totals a trip.',
      executable: lookup(
        'budget',
        z.object({ flight: z.number(), nights: z.number() }),
        ({ flight, nights }) => ({ total: flight + nights * 120 }),
      ),
    },
    {
      name: 'summarize',
      description: 'Writes the briefing.',
      executable: lookup(
        'summarize',
        z.object({ forecast: z.string(), hotel: z.string(), total: z.number() }),
        ({ forecast, hotel, total }) => `Lisbon: ${forecast}; ${hotel}; ${total} EUR`,
      ),
    },
  ];
  return { sideEffects, planningModel, conciergeModel, capabilities };
}

type TripWorld = ReturnType<typeof tripWorld>;

/** Keys of the effects whose settlement was durable once the crash at `index` fell. */
function durablySettled(trace: readonly Boundary[], index: number): Set<string> {
  const performed = new Map<string, Set<string>>();
  const settled = new Set<string>();
  for (const [at, boundary] of trace.slice(0, index + 1).entries()) {
    const ofRun = performed.get(boundary.runId) ?? new Set<string>();
    performed.set(boundary.runId, ofRun);
    // A crash at `effect.after` falls before the outcome is recorded.
    if (boundary.point === 'effect.after' && boundary.effectId !== undefined && at < index) {
      ofRun.add(boundary.effectId);
    }
    if (boundary.point === 'journal.after') {
      for (const entry of boundary.entries ?? []) {
        if (entry.startsWith('settled:')) settled.add(entry.slice('settled:'.length));
      }
    }
    // A checkpoint holds the outcome of every effect of its run that settled before it.
    if (boundary.point === 'checkpoint.after') for (const id of ofRun) settled.add(id);
  }
  return new Set([...settled].map((effectId) => effectId.split('/').at(-1) ?? effectId));
}

describe('crash at every boundary of a planner', () => {
  it('plans once, runs no settled node or child tool twice, counts usage once, same output', async () => {
    const worlds: TripWorld[] = [];
    const report = await exploreCrashes<string, PlannerResult>({
      input: 'Prepare a three-night trip to Lisbon.',
      setup() {
        const world = tripWorld();
        worlds.push(world);
        return {
          create: (store, clock) =>
            definePlanner({
              name: 'trip',
              model: world.planningModel,
              capabilities: world.capabilities,
              maxParallel: 2,
              durable: { store, clock, leaseMs: 30_000 },
            }),
          sideEffects: () => world.sideEffects,
          modelCalls: () => world.planningModel.calls.length + world.conciergeModel.calls.length,
        };
      },
      observe: observePlanner,
      idempotent: (key) => key !== 'book-1',
    });

    console.log(
      `planner crash exploration: ${report.boundaries} boundaries covered ` +
        `(${Object.entries(report.byPoint)
          .map(([point, n]) => `${point}: ${n}`)
          .join(', ')})`,
    );
    expect(report.violations).toEqual([]);
    expect(worlds).toHaveLength(report.boundaries + 1);
    const [baseline] = worlds;
    expect(baseline?.planningModel.calls).toHaveLength(1);
    expect(baseline?.conciergeModel.calls).toHaveLength(3);
    expect(baseline?.sideEffects).toEqual({
      weather: 1,
      flights: 1,
      budget: 1,
      summary: 1,
      'search-1': 1,
      'search-2': 1,
      'book-1': 1,
    });

    const trace = report.cases.map((c) => c.boundary);
    const planner = 'crash-harness-run';
    // The child's boundaries are crashed at too.
    expect(trace.some((b) => b.runId === childRunId(planner, 'hotel'))).toBe(true);

    // The only planning call that can be repeated is one that answered but whose answer was not yet
    // checkpointed (the planning effect is idempotent, so its outcome is journaled with the next checkpoint).
    const planAnswered = trace.findIndex(
      (b) => b.point === 'effect.after' && b.effectId === 'plan-0',
    );
    const planCheckpointed = trace.findIndex(
      (b, i) => i > planAnswered && b.runId === planner && b.point === 'checkpoint.after',
    );
    for (const [index, crashCase] of report.cases.entries()) {
      const world = worlds[index + 1]!;
      const window = index >= planAnswered && index < planCheckpointed;
      expect(world.planningModel.calls, `crash #${index}`).toHaveLength(window ? 2 : 1);
      // The child continues from its last trip: at most the one model call in flight is asked again.
      expect(world.conciergeModel.calls.length, `crash #${index}`).toBeLessThanOrEqual(4);
      // A node or child tool call whose outcome was durable at the crash never ran again.
      for (const key of durablySettled(trace, index)) {
        if (key in baseline!.sideEffects) {
          expect(
            world.sideEffects[key],
            `crash #${index} at ${crashCase.boundary.point}: ${key}`,
          ).toBe(baseline!.sideEffects[key]);
        }
      }
    }
    expect(planCheckpointed - planAnswered).toBe(2);

    // The booking in flight at a crash was answered as unknown inside the child, never run again.
    const reportedUnknown = new Set(report.cases.flatMap((c) => c.unknown));
    expect([...reportedUnknown]).toEqual(['book-1']);
  });
});
