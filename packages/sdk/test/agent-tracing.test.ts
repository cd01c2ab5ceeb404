import { trace } from '@opentelemetry/api';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace';
import { defineAgent, memoryStore, type AnyTool } from '@cairn/sdk';
import { createFakeClock, scriptedModel, SimulatedCrash, type ScriptedTurn } from '@cairn/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { countingTool } from './helpers.js';

const script: ScriptedTurn[] = [
  {
    toolCalls: [{ id: 'p1', name: 'pay', args: { value: 'a' } }],
    usage: { inputTokens: 10, outputTokens: 1 },
  },
  {
    toolCalls: [{ id: 'p2', name: 'pay', args: { value: 'b' } }],
    usage: { inputTokens: 20, outputTokens: 2 },
  },
  { text: 'paid twice', usage: { inputTokens: 30, outputTokens: 3 } },
];

let exporter: InMemorySpanExporter;
let provider: TracerProvider;
beforeEach(() => {
  exporter = new InMemorySpanExporter();
  provider = new TracerProvider({
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
});
afterEach(() => vi.restoreAllMocks());

function world(tools?: AnyTool[]) {
  const clock = createFakeClock({ autoAdvance: true });
  const store = memoryStore({ clock });
  const pay = countingTool('pay');
  const model = scriptedModel(script, { name: 'gpt-test', provider: 'openai' });
  const make = () =>
    defineAgent({
      name: 'payer',
      model,
      tools: tools ?? [pay.tool],
      maxTrips: 5,
      durable: { store, clock, leaseMs: 1_000 },
      tracerProvider: provider,
    });
  return { clock, store, make, pay };
}

const spans = () => exporter.getFinishedSpans();
const named = (name: string) => spans().filter((span) => span.name === name);
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const idOf = (span: ReadableSpan) => span.spanContext().spanId;

describe('tracing an agent run', () => {
  it('nests trips, model calls and tool calls under the run span with GenAI attributes', async () => {
    const { make } = world();
    await make().execute('pay', { runId: 'traced' });

    const [run] = named('cairn.run');
    expect(run?.attributes).toMatchObject({
      'cairn.run.id': 'traced',
      'cairn.run.kind': 'agent',
      'cairn.agent.name': 'payer',
      'cairn.run.resumed': false,
      'cairn.run.epoch': 1,
      'cairn.run.outcome': 'completed',
    });
    const trips = named('cairn.trip');
    expect(trips.map((trip) => trip.attributes['cairn.trip.index'])).toEqual([0, 1, 2]);
    for (const trip of trips) expect(parentOf(trip)).toBe(idOf(run!));

    const chats = named('chat gpt-test');
    expect(chats).toHaveLength(3);
    expect(chats[0]?.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'gpt-test',
      'gen_ai.provider.name': 'openai',
      'gen_ai.usage.input_tokens': 10,
      'gen_ai.usage.output_tokens': 1,
    });
    const tools = named('execute_tool pay');
    expect(tools.map((span) => span.attributes['gen_ai.tool.call.id'])).toEqual(['p1', 'p2']);
    expect(tools[0]?.attributes['gen_ai.operation.name']).toBe('execute_tool');
    // The first trip's model call and tool call both sit in the first trip's span.
    expect(parentOf(chats[0]!)).toBe(idOf(trips[0]!));
    expect(parentOf(tools[0]!)).toBe(idOf(trips[0]!));
    expect(new Set(spans().map((span) => span.spanContext().traceId)).size).toBe(1);
  });

  it('links a resumed attempt to the original trace and does not report reused trips again', async () => {
    const { make, clock } = world();
    await expect(
      make().execute('pay', {
        runId: 'resumed',
        onBoundary: (b) => {
          if (b.point === 'effect.before' && b.effectId === 'trip-2/model')
            throw new SimulatedCrash(b);
        },
      }),
    ).rejects.toBeInstanceOf(SimulatedCrash);
    const [first] = named('cairn.run');
    expect(first?.attributes['cairn.run.outcome']).toBe('crashed');
    exporter.reset();

    await clock.advance(1_001);
    const result = await make().resume('resumed');
    const [second] = named('cairn.run');
    expect(second?.attributes).toMatchObject({ 'cairn.run.resumed': true, 'cairn.run.epoch': 2 });
    expect(second?.links).toHaveLength(1);
    expect(second?.links[0]?.context).toMatchObject({
      traceId: first?.spanContext().traceId,
      spanId: first?.spanContext().spanId,
    });
    // Only the trip that had not run is reported by the second attempt.
    expect(named('cairn.trip').map((trip) => trip.attributes['cairn.trip.index'])).toEqual([2]);
    expect(named('execute_tool pay')).toHaveLength(0);
    const resumedTokens = named('chat gpt-test').reduce(
      (sum, span) => sum + Number(span.attributes['gen_ai.usage.input_tokens']),
      0,
    );
    expect(resumedTokens + 10 + 20).toBe(result.usage.inputTokens);
  });

  it('marks a tool call answered as outcome unknown on its span', async () => {
    const { make, clock } = world();
    await expect(
      make().execute('pay', {
        runId: 'unknown',
        onBoundary: (b) => {
          if (b.point === 'effect.after' && b.effectId === 'trip-1/tool/p2')
            throw new SimulatedCrash(b);
        },
      }),
    ).rejects.toBeInstanceOf(SimulatedCrash);
    exporter.reset();
    await clock.advance(1_001);
    await make().resume('unknown');
    const [unknown] = named('execute_tool pay');
    expect(unknown?.attributes).toMatchObject({
      'cairn.effect.outcome': 'unknown',
      'gen_ai.tool.call.id': 'p2',
    });
    expect(unknown?.events.map((event) => event.name)).toContain('cairn.outcome_unknown');
  });

  it('records errors with their code where they happen, and drift as an event', async () => {
    const failing: AnyTool = {
      name: 'pay',
      description: 'fails',
      input: z.object({ value: z.string() }),
      idempotent: false,
      retry: undefined,
      execute: () => {
        throw new Error('card declined');
      },
    };
    const { make } = world([failing]);
    await make().execute('pay', { runId: 'errors' });
    const [tool] = named('execute_tool pay');
    expect(tool?.status.code).toBe(2);
    expect(tool?.events.map((event) => event.name)).toContain('exception');

    exporter.reset();
    const driftWorld = world();
    await expect(
      driftWorld.make().execute('pay', {
        runId: 'drifted',
        onBoundary: (b) => {
          if (b.point === 'effect.before') throw new SimulatedCrash(b);
        },
      }),
    ).rejects.toBeInstanceOf(SimulatedCrash);
    await driftWorld.clock.advance(1_001);
    exporter.reset();
    const drifting = defineAgent({
      name: 'payer',
      model: scriptedModel(script, { name: 'gpt-test-2', provider: 'openai' }),
      tools: [driftWorld.pay.tool],
      maxTrips: 5,
      durable: { store: driftWorld.store, clock: driftWorld.clock },
      tracerProvider: provider,
    });
    await expect(drifting.resume('drifted')).rejects.toMatchObject({ code: 'AGENT_DRIFT' });
    const [run] = named('cairn.run');
    expect(run?.attributes['cairn.error.code']).toBe('AGENT_DRIFT');
    expect(run?.events.map((event) => event.name)).toEqual(
      expect.arrayContaining(['cairn.drift', 'exception']),
    );
  });

  it('never touches the global tracer provider', async () => {
    const before = trace.getTracerProvider();
    const setGlobal = vi.spyOn(trace, 'setGlobalTracerProvider');
    const { make } = world();
    await make().execute('pay');
    // Without a provider passed in, the global one is used: a no-op until an SDK registers one.
    await defineAgent({ name: 'plain', model: scriptedModel([{ text: 'hi' }]) }).execute('hi');
    expect(setGlobal).not.toHaveBeenCalled();
    expect(trace.getTracerProvider()).toBe(before);
  });
});
