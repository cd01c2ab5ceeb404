import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace';
import { childRunId, defineAgent, definePlanner, defineTool, memoryStore } from '@cairn/sdk';
import { createFakeClock, scriptedModel, SimulatedCrash } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const plan = {
  nodes: [
    { id: 'weather', capability: 'weather', input: { city: 'Lisbon' }, dependsOn: [] },
    { id: 'hotel', capability: 'concierge', input: { city: 'Lisbon' }, dependsOn: ['weather'] },
  ],
};

function world() {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  const clock = createFakeClock({ autoAdvance: true });
  const store = memoryStore({ clock });
  const planning = scriptedModel(
    [{ text: JSON.stringify(plan), usage: { inputTokens: 50, outputTokens: 20 } }],
    {
      name: 'planner-model',
      provider: 'openai',
    },
  );
  const conciergeModel = scriptedModel(
    [
      {
        toolCalls: [{ id: 'book', name: 'book', args: { hotel: 'Casa Azul' } }],
        usage: { inputTokens: 10, outputTokens: 2 },
      },
      { text: 'booked Casa Azul', usage: { inputTokens: 12, outputTokens: 3 } },
    ],
    { name: 'concierge-model', provider: 'anthropic' },
  );
  const concierge = defineAgent({
    name: 'concierge',
    model: conciergeModel,
    tools: [
      defineTool({
        name: 'book',
        description: 'Book.',
        input: z.object({ hotel: z.string() }),
        execute: ({ hotel }) => ({ hotel }),
      }),
    ],
  });
  const weather = defineTool({
    name: 'weather',
    description: 'Forecast.',
    input: z.object({ city: z.string() }),
    idempotent: true,
    execute: ({ city }) => ({ city, forecast: 'sunny' }),
  });
  const make = () =>
    definePlanner({
      name: 'trip',
      model: planning,
      capabilities: [
        { name: 'weather', description: 'The forecast.', executable: weather },
        { name: 'concierge', description: 'Books a hotel.', executable: concierge },
      ],
      durable: { store, clock, leaseMs: 1_000 },
      tracerProvider: provider,
    });
  const spans = () => exporter.getFinishedSpans();
  const named = (name: string) => spans().filter((span) => span.name === name);
  return { make, clock, exporter, spans, named };
}

const parentOf = (span: ReadableSpan | undefined) => span?.parentSpanContext?.spanId;
const idOf = (span: ReadableSpan | undefined) => span?.spanContext().spanId;

describe('tracing a planner run', () => {
  it('nests the planning call, nodes, and the child agent run with its trips', async () => {
    const { make, named } = world();
    await make().execute('Plan a trip', { runId: 'p1' });
    const runs = named('cairn.run');
    const planner = runs.find((span) => span.attributes['cairn.run.kind'] === 'planner');
    const child = runs.find((span) => span.attributes['cairn.run.kind'] === 'agent');
    expect(planner?.attributes).toMatchObject({
      'cairn.run.id': 'p1',
      'cairn.planner.name': 'trip',
      'cairn.run.outcome': 'completed',
    });
    const [planning] = named('chat planner-model');
    expect(parentOf(planning)).toBe(idOf(planner));
    expect(planning?.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 50,
      'gen_ai.usage.output_tokens': 20,
    });

    const nodes = named('cairn.node');
    expect(nodes.map((node) => node.attributes['cairn.node.id']).sort()).toEqual([
      'hotel',
      'weather',
    ]);
    for (const node of nodes) expect(parentOf(node)).toBe(idOf(planner));
    const hotel = nodes.find((node) => node.attributes['cairn.node.id'] === 'hotel');
    const [invoke] = named('invoke_agent concierge');
    expect(parentOf(invoke)).toBe(idOf(hotel));
    expect(parentOf(child)).toBe(idOf(invoke));
    expect(child?.attributes).toMatchObject({
      'cairn.run.id': childRunId('p1', 'hotel'),
      'cairn.agent.name': 'concierge',
    });
    const trips = named('cairn.trip');
    expect(trips).toHaveLength(2);
    for (const trip of trips) expect(parentOf(trip)).toBe(idOf(child));
    expect(named('execute_tool weather')[0]?.attributes['gen_ai.tool.call.id']).toBe('weather');
  });

  it('after a crash in the child agent, reports only what ran again, linked to the original trace', async () => {
    const { make, clock, exporter, named } = world();
    await expect(
      make().execute('Plan a trip', {
        runId: 'p2',
        onBoundary: (b) => {
          if (
            b.runId === childRunId('p2', 'hotel') &&
            b.point === 'effect.before' &&
            b.effectId === 'trip-1/model'
          )
            throw new SimulatedCrash(b);
        },
      }),
    ).rejects.toBeInstanceOf(SimulatedCrash);
    const original = named('cairn.run').find(
      (span) => span.attributes['cairn.run.kind'] === 'planner',
    );
    exporter.reset();
    await clock.advance(1_001);
    const result = await make().resume('p2');

    const planner = named('cairn.run').find(
      (span) => span.attributes['cairn.run.kind'] === 'planner',
    );
    expect(planner?.links[0]?.context.spanId).toBe(idOf(original));
    // The plan and the weather node were settled before the crash: not reported again.
    expect(named('chat planner-model')).toEqual([]);
    expect(named('execute_tool weather')).toEqual([]);
    expect(named('cairn.node').map((node) => node.attributes['cairn.node.id'])).toEqual(['hotel']);
    // The child resumed at its second trip; its first trip and its booking are not reported again.
    const child = named('cairn.run').find((span) => span.attributes['cairn.run.kind'] === 'agent');
    expect(child?.attributes['cairn.run.resumed']).toBe(true);
    expect(named('cairn.trip').map((trip) => trip.attributes['cairn.trip.index'])).toEqual([1]);
    expect(named('execute_tool book')).toEqual([]);
    expect(result.usage).toEqual({ inputTokens: 72, outputTokens: 25, totalTokens: 97 });
  });
});
