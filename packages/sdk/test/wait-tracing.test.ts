import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace';
import {
  defineAgent,
  defineTool,
  memoryStore,
  pendingApprovals,
  RunWaitingError,
} from '@cairn/sdk';
import { createFakeClock, scriptedModel } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const idOf = (span: ReadableSpan) => span.spanContext().spanId;
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

describe('tracing a run that waits', () => {
  it('ends the waiting attempt without an error, and gives the wait a span from its start to its end, with the signal', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({
      spanProcessors: [new SimpleSpanProcessor({ exporter })],
    });
    const clock = createFakeClock({ autoAdvance: true });
    const store = memoryStore({ clock });
    const agent = defineAgent({
      name: 'refunds',
      model: scriptedModel([
        { toolCalls: [{ id: 'c1', name: 'refund', args: { cents: 50_000 } }] },
        { text: 'done' },
      ]),
      tools: [
        defineTool({
          name: 'refund',
          description: 'Refunds.',
          input: z.object({ cents: z.number() }),
          execute: ({ cents }) => ({ refunded: cents }),
        }),
      ],
      approval: { tools: { refund: true } },
      durable: { store, clock },
      tracerProvider: provider,
    });
    await expect(agent.execute('refund', { runId: 'r-1' })).rejects.toBeInstanceOf(RunWaitingError);
    const waitStarted = clock.now();
    const [first] = exporter.getFinishedSpans().filter((s) => s.name.startsWith('cairn.run'));
    expect(first?.attributes['cairn.run.outcome']).toBe('waiting');
    expect(first?.status.code).not.toBe(2);
    expect(first?.events.map((e) => e.name)).toContain('cairn.wait');

    await clock.advance(3_600_000);
    const { argsHash } = pendingApprovals((await store.load('r-1'))!.run.wait?.detail)[0]!;
    await agent.approve('r-1', 'c1', { argsHash, by: 'ana' });
    await agent.resume('r-1');

    const runs = exporter.getFinishedSpans().filter((s) => s.name.startsWith('cairn.run'));
    expect(runs).toHaveLength(2);
    const [wait] = exporter.getFinishedSpans().filter((s) => s.name === 'cairn.wait');
    expect(parentOf(wait!)).toBe(idOf(runs[1]!));
    expect(wait!.attributes['cairn.wait.signals']).toEqual(['cairn.approval', 'cairn.steer']);
    expect(wait!.attributes['cairn.wait.timed_out']).toBe(false);
    expect(wait!.events.map((e) => [e.name, e.attributes?.['cairn.signal.name']])).toEqual([
      ['cairn.signal', 'cairn.approval'],
    ]);
    // From when the run began to wait to when it woke, an hour later, across the two attempts.
    const ms = (t: [number, number]) => t[0] * 1000 + t[1] / 1e6;
    expect(ms(wait!.startTime)).toBe(waitStarted);
    expect(ms(wait!.endTime) - ms(wait!.startTime)).toBe(3_600_000);
    // The second attempt links to the first's trace.
    expect(runs[1]!.links.map((l) => l.context.traceId)).toContain(runs[0]!.spanContext().traceId);
  });
});
