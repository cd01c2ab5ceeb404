import {
  CairnError,
  createRunner,
  defineAgent,
  defineTool,
  memoryStore,
  type AgentResult,
  type Clock,
  type DurableDefinition,
  type DurableStore,
  type JournalEntry,
  type ModelMessage,
} from '@cairn/sdk';
import {
  createFakeClock,
  exploreCrashes,
  observeAgent,
  scriptedModel,
  type ScriptedTurn,
} from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { crashAtCheckpointOnce } from './helpers.js';
import { interceptWrites } from './interleave.js';

/** An agent with an `echo` tool that records every call it gets; the script's turns answer it. */
function echoAgent(script: ScriptedTurn[]) {
  const clock = createFakeClock({ autoAdvance: true });
  const { agent, ran, model } = echoAgentOn(memoryStore({ clock }), clock, script);
  return { agent: agent(), ran, model };
}

/** `echoAgent` on a given store: `agent(store)` defines it on that store (or a wrapper of it). */
function echoAgentOn(store: DurableStore, clock: Clock, script: ScriptedTurn[]) {
  const ran: Array<{ toolCallId: string; idempotencyKey: string; value: string }> = [];
  const model = scriptedModel(script);
  const echoTool = defineTool({
    name: 'echo',
    description: 'Echoes its value.',
    input: z.object({ value: z.string() }),
    execute: ({ value }, ctx) => {
      ran.push({ toolCallId: ctx.toolCallId, idempotencyKey: ctx.idempotencyKey, value });
      return { echo: value };
    },
  });
  const agent = (on: DurableStore = store) =>
    defineAgent({
      name: 'echo-agent',
      model,
      tools: [echoTool],
      durable: { store: on, clock, leaseMs: 10_000 },
    });
  return { agent, ran, model };
}

type ToolMessage = Extract<ModelMessage, { role: 'tool' }>;

/**
 * The model's view of one trip: for each call of the assistant message at `index`, in order, its id, the value
 * it asked to echo, and the answers whose `toolCallId` names it (exactly one when ids are distinct).
 */
function answersByCall(messages: readonly ModelMessage[], index: number) {
  const assistant = messages[index];
  if (assistant?.role !== 'assistant') throw new Error(`message ${index} is no assistant message`);
  const answers = messages.filter((m): m is ToolMessage => m.role === 'tool');
  return (assistant.toolCalls ?? []).map((call) => ({
    id: call.id,
    asked: (call.args as { value: string }).value,
    answers: answers.filter((a) => a.toolCallId === call.id).map((a) => a.content),
  }));
}

const echo = (id: string, value: string) => ({ id, name: 'echo', args: { value } });

describe('tool call ids the model repeats', () => {
  it('runs both calls of a repeated id once each and answers each under an id of its own', async () => {
    const { agent, ran, model } = echoAgent([
      { toolCalls: [echo('same', 'first'), echo('same', 'second')] },
      { text: 'done' },
    ]);
    const result = await agent.execute('go');
    expect(result.output).toBe('done');
    expect(ran.map((r) => r.value)).toEqual(['first', 'second']);
    expect(new Set(ran.map((r) => r.toolCallId)).size).toBe(2);
    expect(new Set(ran.map((r) => r.idempotencyKey)).size).toBe(2);
    // The first call keeps the model's id; what the model is sent back pairs each call with its own answer.
    const view = answersByCall(model.calls[1]!.messages, 1);
    expect(view[0]?.id).toBe('same');
    expect(view.map((call) => call.answers)).toEqual([[{ echo: 'first' }], [{ echo: 'second' }]]);
    expect(view.map((call) => call.id)).toEqual(ran.map((r) => r.toolCallId));
  });

  it('never gives a repeated or empty id one the model gave another call of the same answer', async () => {
    const { agent, ran, model } = echoAgent([
      {
        toolCalls: [
          echo('', 'empty'),
          echo('call-0-0', 'named like a generated id'),
          echo('a', 'a'),
          echo('a', 'a again'),
          echo('a_3', 'named like a renamed id'),
          echo('a', 'a a third time'),
        ],
      },
      { text: 'done' },
    ]);
    await agent.execute('go');
    const view = answersByCall(model.calls[1]!.messages, 1);
    expect(view.map((call) => call.answers)).toEqual(view.map((call) => [{ echo: call.asked }]));
    expect(new Set(view.map((call) => call.id)).size).toBe(6);
    // The model's own ids stay on the calls it gave them to (the first of a repeated one).
    expect(view[1]?.id).toBe('call-0-0');
    expect(view[2]?.id).toBe('a');
    expect(view[4]?.id).toBe('a_3');
    expect(ran).toHaveLength(6);
  });

  it('keeps ids the run has not seen, names an empty id call-<trip>-<index>, renames one an earlier trip had', async () => {
    const { agent, model } = echoAgent([
      { toolCalls: [echo('x', '1'), echo('', '2')] },
      { toolCalls: [echo('x', '3')] },
      { text: 'done' },
    ]);
    await agent.execute('go');
    const messages = model.calls[2]!.messages;
    expect(answersByCall(messages, 1).map((call) => call.id)).toEqual(['x', 'call-0-1']);
    expect(answersByCall(messages, 4).map((call) => call.id)).toEqual(['x_0']);
  });
});

describe('a tool call id the model gives again in a later trip', () => {
  it('gets an id, and so an idempotency key, of its own: the later call is not taken for the earlier one', async () => {
    // Some OpenAI-compatible servers number calls per answer: `call_0` in every trip. An API deduplicating by
    // `ctx.idempotencyKey` would otherwise drop the second refund as a repeat of the first.
    const { agent, ran, model } = echoAgent([
      { toolCalls: [echo('call_0', 'first refund')] },
      { toolCalls: [echo('call_0', 'second refund')] },
      { text: 'done' },
    ]);
    const result = await agent.execute('go', { runId: 'numbered' });
    expect(result.output).toBe('done');
    expect(ran.map((call) => call.value)).toEqual(['first refund', 'second refund']);
    expect(new Set(ran.map((call) => call.idempotencyKey)).size).toBe(2);
    expect(new Set(ran.map((call) => call.toolCallId)).size).toBe(2);
    expect(ran[0]).toMatchObject({ toolCallId: 'call_0', idempotencyKey: 'numbered:call_0' });
    // The model sees each answer under the id of the call it answers.
    const last = model.calls.at(-1)?.messages ?? [];
    const assistants = last.flatMap((m, i) => (m.role === 'assistant' ? [i] : []));
    for (const index of assistants) {
      for (const call of answersByCall(last, index)) expect(call.answers).toHaveLength(1);
    }
  });
});

/**
 * Runs `script` until both calls ran and crashes before the checkpoint, with the journal written as the previous
 * id scheme did (effect id `renamed` written as `shared`), then resumes it with the current scheme.
 */
async function resumeLegacyJournal(script: ScriptedTurn[], renamed: string, shared: string) {
  const clock = createFakeClock({ autoAdvance: true });
  const store = memoryStore({ clock });
  const { agent: make, ran } = echoAgentOn(store, clock, script);
  const legacy = interceptWrites(store, (kind, args) => {
    if (kind !== 'append') return;
    for (const entry of args[1] as JournalEntry[])
      if (entry.effectId === renamed) entry.effectId = shared;
  });
  await crashAtCheckpointOnce(make(legacy), 'legacy', () => ran.length === 2);
  await clock.advance(10_001);
  const result = await make(store).resume('legacy');
  return { result, ran };
}

describe('a run whose journal the previous id scheme wrote', () => {
  it('reports a renamed repeat unknown, not running it again, when its marks are under the shared id', async () => {
    // The previous version journaled both calls under the one effect id the model's repeated id made.
    const { result, ran } = await resumeLegacyJournal(
      [{ toolCalls: [echo('a', 'x'), echo('a', 'y')] }, { text: 'done' }],
      'trip-0/tool/a_1',
      'trip-0/tool/a',
    );
    expect(result.output).toBe('done');
    expect(ran.map((r) => r.value)).toEqual(['x', 'y']);
    const second = result.messages.find((m) => m.role === 'tool' && m.toolCallId === 'a_1');
    expect(second).toMatchObject({ outcome: 'unknown' });
  });

  it('reports a call renamed for an earlier trip’s id unknown when it was journaled under the model’s id', async () => {
    // The previous version journaled the second trip's call under the id the model gave it.
    const { result, ran } = await resumeLegacyJournal(
      [
        { toolCalls: [echo('call_0', 'x')] },
        { toolCalls: [echo('call_0', 'y')] },
        { text: 'done' },
      ],
      'trip-1/tool/call_0_0',
      'trip-1/tool/call_0',
    );
    expect(result.output).toBe('done');
    expect(ran.map((r) => r.value)).toEqual(['x', 'y']);
    const second = result.messages.find((m) => m.role === 'tool' && m.toolCallId === 'call_0_0');
    expect(second).toMatchObject({ outcome: 'unknown' });
  });
});

describe('crash at every boundary of an agent whose model repeats tool call ids', () => {
  // Repeated ids across a non-idempotent and an idempotent tool, empty ids, and a repeated id whose renamed
  // form an earlier trip's call has, then an answer.
  const charge = (id: string, value: string) => ({ id, name: 'charge', args: { value } });
  const lookup = (id: string, value: string) => ({ id, name: 'lookup', args: { value } });
  const script: ScriptedTurn[] = [
    { toolCalls: [charge('dup', 'a'), lookup('dup', 'b'), charge('dup', 'c'), lookup('e_3', 'd')] },
    { toolCalls: [charge('', 'e'), lookup('', 'f'), charge('e', 'g'), charge('e', 'h')] },
    { text: 'done' },
  ];
  // Which tool each (derived) tool call id ran, for the harness's idempotency check.
  const toolOf = new Map<string, string>();

  function world() {
    const sideEffects: Record<string, number> = {};
    const model = scriptedModel(script);
    const tool = (name: string, idempotent: boolean) =>
      defineTool({
        name,
        description: `The ${name} tool.`,
        input: z.object({ value: z.string() }),
        idempotent,
        execute: ({ value }, ctx) => {
          toolOf.set(ctx.toolCallId, name);
          sideEffects[ctx.toolCallId] = (sideEffects[ctx.toolCallId] ?? 0) + 1;
          return { [name]: value };
        },
      });
    return { sideEffects, model, tools: [tool('charge', false), tool('lookup', true)] };
  }

  /**
   * Problems with what one request showed the model: after each assistant message, one answer per call, found
   * by the call's id, holding that call's result (or saying its outcome is unknown), and no other answer.
   */
  function viewProblems(messages: readonly ModelMessage[]): string[] {
    const problems: string[] = [];
    messages.forEach((message, index) => {
      if (message.role !== 'assistant' || message.toolCalls === undefined) return;
      const next = messages.findIndex((m, i) => i > index && m.role === 'assistant');
      const answers = messages
        .slice(index + 1, next === -1 ? undefined : next)
        .filter((m): m is ToolMessage => m.role === 'tool');
      if (answers.length !== message.toolCalls.length)
        problems.push(`${answers.length} answers to ${message.toolCalls.length} calls`);
      for (const call of message.toolCalls) {
        const own = answers.filter((answer) => answer.toolCallId === call.id);
        const expected = { [call.name]: (call.args as { value: string }).value };
        const right =
          own.length === 1 &&
          (own[0]!.outcome === 'unknown' ||
            JSON.stringify(own[0]!.content) === JSON.stringify(expected));
        if (!right) problems.push(`call ${call.id} was answered ${JSON.stringify(own)}`);
      }
    });
    return problems;
  }

  it('keeps each call answered once under its own id in every request, and the same ids after resume', async () => {
    const worlds: Array<ReturnType<typeof world>> = [];
    const report = await exploreCrashes<string, AgentResult<unknown>>({
      input: 'Charge three things.',
      setup() {
        const made = world();
        worlds.push(made);
        return {
          create: (store, clock) =>
            defineAgent({
              name: 'repeats',
              model: made.model,
              tools: made.tools,
              maxTrips: 5,
              durable: { store, clock, leaseMs: 30_000 },
            }),
          sideEffects: () => made.sideEffects,
          modelCalls: () => made.model.calls.length,
        };
      },
      observe: observeAgent,
      idempotent: (key) => toolOf.get(key) === 'lookup',
    });
    expect(report.violations).toEqual([]);
    expect(report.boundaries).toBeGreaterThanOrEqual(20);
    // Every call ran once in the uninterrupted run, each under an id of its own in the whole run.
    expect(Object.values(worlds[0]!.sideEffects)).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
    const baselineIds = idsPerTrip(worlds[0]!.model.calls.at(-1)!.messages);
    expect(baselineIds).toEqual([
      ['dup', 'dup_1', 'dup_2', 'e_3'],
      ['call-1-0', 'call-1-1', 'e', 'e_3_2'],
    ]);
    for (const [index, made] of worlds.entries()) {
      for (const request of made.model.calls) {
        expect(viewProblems(request.messages), `world ${index}`).toEqual([]);
      }
      const ids = idsPerTrip(made.model.calls.at(-1)!.messages);
      expect(ids, `world ${index}`).toEqual(baselineIds.slice(0, ids.length));
    }
    // The non-idempotent calls in flight at some crash were reported unknown, each under its own id.
    const unknown = new Set(report.cases.flatMap((c) => c.unknown));
    expect([...unknown].sort()).toEqual(['call-1-0', 'dup', 'dup_2', 'e', 'e_3_2']);
  });

  function idsPerTrip(messages: readonly ModelMessage[]): string[][] {
    return messages.flatMap((m) =>
      m.role === 'assistant' && m.toolCalls !== undefined ? [m.toolCalls.map((c) => c.id)] : [],
    );
  }
});

describe('effect ids a step function repeats', () => {
  it('ends the run failed with INVALID_ARGUMENT, before either runs, for two pending effects with one id', async () => {
    const performed: string[] = [];
    const definition: DurableDefinition<{ done: boolean }, string, string> = {
      kind: 'workflow',
      name: 'repeats-effects',
      signature: 'repeats-effects-1',
      init: () => ({ done: false }),
      step: (state, event) =>
        event.type === 'start'
          ? {
              state,
              commands: ['a', 'b'].map((which) => ({
                type: 'perform' as const,
                id: 'same',
                effect: { kind: 'work', which },
                idempotent: false,
              })),
            }
          : { state: { done: true }, commands: [{ type: 'complete', output: 'done' }] },
      perform: (effect) => {
        performed.push(String(effect.which));
        return Promise.resolve(null);
      },
      parseState: (state) => state as { done: boolean },
      parseOutput: (output) => String(output),
      driftError: (runId) => new CairnError('AGENT_DRIFT', runId),
    };
    const clock = createFakeClock({ autoAdvance: true });
    const store = memoryStore({ clock });
    const error = await createRunner(definition, { store, clock })
      .execute('go', { runId: 'repeats' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CairnError);
    expect(error).toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('"same"') as unknown,
    });
    expect(performed).toEqual([]);
    // The step would command the same again: the run ends failed, it is not left to be claimed again.
    expect((await store.load('repeats'))?.run.status).toBe('failed');
  });
});
