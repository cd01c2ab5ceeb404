/**
 * OpenTelemetry spans of a crashed-and-resumed agent run, with the OpenTelemetry Node SDK.
 * Run it with `pnpm example:tracing`. The agent uses the global tracer provider the SDK registers.
 */
import { NodeSDK } from '@opentelemetry/sdk-node';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace';
import { defineAgent, defineTool, memoryStore } from '@cairn/sdk';
import { createFakeClock, scriptedModel, SimulatedCrash } from '@cairn/testing';
import { z } from 'zod';

const exporter = new InMemorySpanExporter();
const processor = new SimpleSpanProcessor({ exporter });
const sdk = new NodeSDK({ spanProcessors: [processor] });
sdk.start();

const clock = createFakeClock({ autoAdvance: true });
const store = memoryStore({ clock });
const model = scriptedModel(
  [
    {
      toolCalls: [{ id: 'lookup', name: 'lookup', args: { order: '1042' } }],
      usage: { inputTokens: 120, outputTokens: 12 },
    },
    {
      toolCalls: [{ id: 'refund', name: 'refund', args: { order: '1042' } }],
      usage: { inputTokens: 180, outputTokens: 15 },
    },
    { text: 'Refunded order 1042.', usage: { inputTokens: 220, outputTokens: 9 } },
  ],
  { name: 'gpt-4o', provider: 'openai' },
);
const tools = [
  defineTool({
    name: 'lookup',
    description: 'Find an order.',
    input: z.object({ order: z.string() }),
    idempotent: true,
    execute: ({ order }) => ({ order, cents: 4200 }),
  }),
  defineTool({
    name: 'refund',
    description: 'Refund an order.',
    input: z.object({ order: z.string() }),
    execute: ({ order }) => ({ refunded: order }),
  }),
];
const support = () =>
  defineAgent({ name: 'support', model, tools, durable: { store, clock, leaseMs: 5_000 } });

await support()
  .execute('Refund order 1042', {
    runId: 'ticket-1042',
    onBoundary: (b) => {
      if (b.point === 'effect.after' && b.effectId === 'trip-1/tool/refund')
        throw new SimulatedCrash(b);
    },
  })
  .catch((error: unknown) => {
    if (!(error instanceof SimulatedCrash)) throw error;
  });
await clock.advance(5_001);
await support().resume('ticket-1042');

// The SDK exports once its resource detectors settle; flush before reading the spans.
await processor.forceFlush();
const spans = exporter.getFinishedSpans();
const children = new Map<string | undefined, ReadableSpan[]>();
for (const span of spans) {
  const parent = span.parentSpanContext?.spanId;
  children.set(parent, [...(children.get(parent) ?? []), span]);
}
const interesting = (span: ReadableSpan) =>
  Object.entries(span.attributes)
    .filter(([key]) => /outcome|epoch|resumed|index|tokens|call\.id/.test(key))
    .map(([key, value]) => `${key.replace(/^(cairn|gen_ai)\./, '')}=${String(value)}`)
    .join(' ');
const print = (span: ReadableSpan, depth: number) => {
  const links =
    span.links.length > 0
      ? `  ↪ links to trace ${span.links[0]?.context.traceId.slice(0, 8)}…`
      : '';
  console.log(
    `${'  '.repeat(depth)}${span.name}  [trace ${span.spanContext().traceId.slice(0, 8)}…]  ${interesting(span)}${links}`,
  );
  for (const child of children.get(span.spanContext().spanId) ?? []) print(child, depth + 1);
};
for (const root of spans.filter((span) => span.parentSpanContext === undefined)) print(root, 0);
await sdk.shutdown();
