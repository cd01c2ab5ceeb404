/**
 * An agent crashed in the middle of a run and resumed from its last checkpoint, on the memory store.
 * Run it with `pnpm start`. It prints every effect as it happens, the crash, and what the resume reused.
 */
import { defineAgent, defineTool, memoryStore, type Boundary } from '@cairn/sdk';
import { scriptedModel, SimulatedCrash } from '@cairn/testing';
import { z } from 'zod';

const store = memoryStore();
const sideEffects: string[] = [];

const tools = [
  defineTool({
    name: 'search_flights',
    description: 'Find flights between two cities.',
    input: z.object({ from: z.string(), to: z.string() }),
    idempotent: true,
    execute: async ({ from, to }, ctx) => {
      sideEffects.push(`search_flights ${ctx.toolCallId}`);
      return { flights: [{ id: 'CA981', from, to, price: 420 }] };
    },
  }),
  defineTool({
    name: 'book_flight',
    description: 'Book a flight and charge the card.',
    input: z.object({ flightId: z.string() }),
    execute: async ({ flightId }, ctx) => {
      sideEffects.push(`book_flight ${ctx.toolCallId}`);
      return { confirmation: `BK-${flightId}`, idempotencyKey: ctx.idempotencyKey };
    },
  }),
  defineTool({
    name: 'send_email',
    description: 'Email the traveller.',
    input: z.object({ to: z.string(), body: z.string() }),
    execute: async ({ to }, ctx) => {
      sideEffects.push(`send_email ${ctx.toolCallId}`);
      return { sent: true, to };
    },
  }),
];

const model = scriptedModel([
  {
    text: 'Searching.',
    toolCalls: [{ id: 'search', name: 'search_flights', args: { from: 'PEK', to: 'SFO' } }],
  },
  {
    text: 'Booking CA981.',
    toolCalls: [{ id: 'book', name: 'book_flight', args: { flightId: 'CA981' } }],
  },
  {
    text: 'Confirming by email.',
    toolCalls: [
      { id: 'email', name: 'send_email', args: { to: 'ada@example.com', body: 'Booked BK-CA981' } },
    ],
  },
  { text: 'Booked CA981 (BK-CA981) and emailed Ada.' },
]);

function defineTravelAgent() {
  return defineAgent({
    name: 'travel',
    model,
    tools,
    system: 'You book trips.',
    maxTrips: 8,
    durable: { store, leaseMs: 1_000 },
  });
}

const describe = (b: Boundary) =>
  `${b.point.padEnd(17)} ${b.effectId ?? b.entries?.join(' ') ?? b.status ?? ''}`;

console.log('— first process: run the agent, crash while the email is being sent —');
try {
  await defineTravelAgent().execute('Book me PEK to SFO and email me.', {
    runId: 'trip-42',
    onBoundary: (boundary) => {
      console.log(`  ${describe(boundary)}`);
      if (boundary.point === 'effect.after' && boundary.effectId?.endsWith('/email')) {
        throw new SimulatedCrash(boundary);
      }
    },
  });
} catch (error) {
  if (!(error instanceof SimulatedCrash)) throw error;
  console.log(
    `  ✗ ${error.message}: the process is gone; the email went out but its result was never journaled`,
  );
}

const stored = await store.load('trip-42');
console.log(
  `\nstore: run trip-42 is ${stored?.run.status}, epoch ${stored?.run.epoch}, ` +
    `${stored?.journal.length} journal entries after the last checkpoint`,
);

console.log('\n— second process: the lease runs out, then resume(runId) —');
await new Promise((resolve) => setTimeout(resolve, 1_100));
const callsBefore = model.calls.length;
const result = await defineTravelAgent().resume('trip-42', {
  onBoundary: (boundary) => console.log(`  ${describe(boundary)}`),
});

console.log('\nwhat the model was told about the call that was in flight:');
for (const message of result.messages) {
  if (message.role === 'tool' && message.outcome === 'unknown') {
    console.log(
      `  ${message.toolName} (${message.toolCallId}): ${JSON.stringify(message.content)}`,
    );
  }
}
console.log(`\noutput: ${JSON.stringify(result.output)}`);
console.log(`trips: ${result.trips}, resumed: ${result.resumed}`);
console.log(
  `model calls after the crash: ${model.calls.length - callsBefore} (settled responses were reused)`,
);
console.log(`usage, each settled model call counted once: ${JSON.stringify(result.usage)}`);
console.log('side effects, in order:');
for (const effect of sideEffects) console.log(`  ${effect}`);
const counts = new Map<string, number>();
for (const effect of sideEffects) counts.set(effect, (counts.get(effect) ?? 0) + 1);
const twice = [...counts].filter(([, n]) => n > 1);
console.log(twice.length === 0 ? 'no tool ran twice' : `RAN TWICE: ${JSON.stringify(twice)}`);
if (twice.length > 0) process.exitCode = 1;
