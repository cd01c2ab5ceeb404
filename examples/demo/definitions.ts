/**
 * The demo's agent and planner. Every tool's side effect is a row in `<schema>.side_effects`, outside
 * Cairn's store, the way a payment or an email would be: the demo counts them at the end.
 */
import { defineAgent, definePlanner, defineTool } from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing/model';
import type { Sql } from 'postgres';
import { z } from 'zod';

/** Tools take this long, so the demo can kill a worker while they run. */
const toolMs = 700;

export function demoDefinitions(sql: Sql, schema: string) {
  const record = (runId: string, toolCallId: string, tool: string) =>
    sql.unsafe(
      `insert into "${schema}".side_effects (run_id, tool_call_id, tool, n) values ($1, $2, $3, 1)
       on conflict (run_id, tool_call_id) do update set n = side_effects.n + 1`,
      [runId, toolCallId, tool],
    );
  const idempotentTools = new Set<string>();
  const tool = <Schema extends z.ZodType>(
    name: string,
    description: string,
    input: Schema,
    idempotent: boolean,
  ) => {
    if (idempotent) idempotentTools.add(name);
    return defineTool({
      name,
      description,
      input,
      idempotent,
      execute: async (args, ctx) => {
        await record(ctx.runId, ctx.toolCallId, name);
        // The booking takes longer, so the demo's kill lands while it is in flight even on a busy machine.
        await new Promise((resolve) =>
          setTimeout(resolve, name === 'book_flight' ? 4 * toolMs : toolMs),
        );
        return { ok: true, tool: name, args: args as never };
      },
    });
  };

  const travel = defineAgent({
    name: 'travel',
    model: scriptedModel(
      [
        {
          toolCalls: [{ id: 'search', name: 'search_flights', args: { from: 'PEK', to: 'SFO' } }],
          usage: { inputTokens: 120, outputTokens: 14 },
        },
        {
          toolCalls: [{ id: 'book', name: 'book_flight', args: { flight: 'CA985' } }],
          usage: { inputTokens: 180, outputTokens: 12 },
        },
        {
          toolCalls: [{ id: 'email', name: 'send_email', args: { to: 'ada@example.com' } }],
          usage: { inputTokens: 230, outputTokens: 16 },
        },
        { text: 'Booked CA985 and emailed Ada.', usage: { inputTokens: 260, outputTokens: 11 } },
      ],
      { name: 'gpt-4o', provider: 'openai' },
    ),
    tools: [
      tool('search_flights', 'Find flights.', z.object({ from: z.string(), to: z.string() }), true),
      tool(
        'book_flight',
        'Book a flight and charge the card.',
        z.object({ flight: z.string() }),
        false,
      ),
      tool('send_email', 'Email the traveller.', z.object({ to: z.string() }), false),
    ],
    system: 'You book trips.',
    maxTrips: 8,
    // Nothing leaves in the traveller's name before a person has read it: the run waits, holding nothing.
    approval: { tools: { send_email: true } },
  });

  const concierge = defineAgent({
    name: 'concierge',
    model: scriptedModel(
      [
        {
          toolCalls: [{ id: 'find-hotel', name: 'find_hotel', args: { city: 'Lisbon' } }],
          usage: { inputTokens: 90, outputTokens: 10 },
        },
        {
          toolCalls: [{ id: 'book-hotel', name: 'book_hotel', args: { hotel: 'Casa Azul' } }],
          usage: { inputTokens: 140, outputTokens: 12 },
        },
        { text: 'Casa Azul, booking bk-7', usage: { inputTokens: 170, outputTokens: 9 } },
      ],
      { name: 'claude-sonnet', provider: 'anthropic' },
    ),
    tools: [
      tool('find_hotel', 'Find hotels.', z.object({ city: z.string() }), true),
      tool('book_hotel', 'Book a hotel.', z.object({ hotel: z.string() }), false),
    ],
    maxTrips: 6,
  });

  const plan = {
    nodes: [
      { id: 'weather', capability: 'weather', input: { city: 'Lisbon' }, dependsOn: [] },
      { id: 'flights', capability: 'flights', input: { city: 'Lisbon' }, dependsOn: [] },
      {
        id: 'hotel',
        capability: 'concierge',
        input: { task: 'Book a hotel in Lisbon' },
        dependsOn: ['weather'],
      },
      {
        id: 'itinerary',
        capability: 'itinerary',
        input: { hotel: { $ref: 'hotel' } },
        dependsOn: ['hotel', 'flights'],
      },
    ],
  };
  const resend = {
    nodes: [
      {
        id: 'itinerary-resent',
        capability: 'itinerary',
        input: { hotel: { $ref: 'hotel' } },
        dependsOn: [],
      },
    ],
  };
  const lisbon = definePlanner({
    name: 'lisbon-trip',
    model: scriptedModel(
      [
        { text: JSON.stringify(plan), usage: { inputTokens: 300, outputTokens: 80 } },
        // Asked again only when the kill lands while the itinerary is being sent: told its outcome is unknown,
        // the model sends it under a new node (a real model would check first).
        { text: JSON.stringify(resend), usage: { inputTokens: 420, outputTokens: 40 } },
      ],
      { name: 'o3', provider: 'openai' },
    ),
    capabilities: [
      {
        name: 'weather',
        description: 'The forecast for a city.',
        executable: tool('weather', 'Forecast.', z.object({ city: z.string() }), true),
      },
      {
        name: 'flights',
        description: 'Flights to a city.',
        executable: tool('flights', 'Flights.', z.object({ city: z.string() }), true),
      },
      { name: 'concierge', description: 'Finds and books a hotel.', executable: concierge },
      {
        name: 'itinerary',
        description: 'Sends the itinerary.',
        executable: tool('itinerary', 'Send it.', z.object({ hotel: z.unknown() }), false),
      },
    ],
    maxParallel: 2,
  });
  return { travel, lisbon, idempotentTools };
}

export async function createSideEffectsTable(sql: Sql, schema: string): Promise<void> {
  await sql.unsafe(
    `create table if not exists "${schema}".side_effects
       (run_id text, tool_call_id text, tool text, n int, primary key (run_id, tool_call_id))`,
  );
}
