import { defineAgent, definePlanner, defineTool, memoryStore } from '@cairn/sdk';
import { createFakeClock, scriptedModel, type ScriptedTurn } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { gate, interceptWrites, stallingTool, standing, ticks } from './interleave.js';

const oneCall: ScriptedTurn[] = [
  { toolCalls: [{ id: 'p1', name: 'pay', args: { value: 'x' } }] },
  { text: 'done' },
];

/** An agent calling `pay` once on a fake clock; `execute` is left running for the test to drive. */
function payer(pay: ReturnType<typeof stallingTool>, script: ScriptedTurn[] = oneCall) {
  const clock = createFakeClock();
  const store = memoryStore({ clock });
  const model = scriptedModel(script);
  const agent = defineAgent({ name: 'payer', model, tools: [pay.tool], durable: { store, clock } });
  return { clock, store, model, run: agent.execute('go', { runId: 'r' }) };
}

function toolAnswer(messages: ReadonlyArray<{ role: string; toolCallId?: string }>, id: string) {
  return messages.find((message) => message.role === 'tool' && message.toolCallId === id);
}

describe('a tool that ignores its signal and runs past its timeout', () => {
  it('is abandoned: its signal aborts, the model is told outcome unknown, and its late result is never written', async () => {
    const pay = stallingTool('pay', { timeoutMs: 5_000 });
    const { clock, store, model, run } = payer(pay);
    await ticks();
    expect(pay.tries).toEqual({ p1: 1 });
    await clock.advance(5_000);
    const ended = await standing(run);
    expect(ended).not.toBe('pending');
    const result = await run;
    expect(pay.signals.p1?.[0]?.aborted).toBe(true);
    expect(pay.signals.p1?.[0]?.reason).toMatchObject({ code: 'TOOL_TIMEOUT' });
    const unknown = {
      role: 'tool',
      toolCallId: 'p1',
      isError: true,
      outcome: 'unknown',
      content: { error: 'OUTCOME_UNKNOWN', message: expect.stringContaining('5000 ms') },
    };
    expect(toolAnswer(result.messages, 'p1')).toMatchObject(unknown);
    expect(toolAnswer(model.calls[1]?.messages ?? [], 'p1')).toMatchObject(unknown);

    // The tool ends long after: nothing of it is written, and it never ran again.
    pay.gateOf('p1').open();
    await ticks();
    expect(JSON.stringify(await store.load('r'))).not.toContain('late');
    expect(pay.tries).toEqual({ p1: 1 });
  });

  it('is not retried when it is not idempotent, whatever its retry policy: its outcome is unknown', async () => {
    const pay = stallingTool('pay', {
      timeoutMs: 1_000,
      retry: { maxAttempts: 3, initialDelayMs: 10 },
      answerFrom: 2,
    });
    const { clock, run } = payer(pay);
    await ticks();
    await clock.advance(1_000);
    await clock.advance(1_000);
    expect(await standing(run)).not.toBe('pending');
    const result = await run;
    expect(pay.tries).toEqual({ p1: 1 });
    expect(toolAnswer(result.messages, 'p1')).toMatchObject({ outcome: 'unknown' });
  });

  it('is tried again under its retry policy when it is idempotent, and the model sees the answer', async () => {
    const pay = stallingTool('pay', {
      idempotent: true,
      timeoutMs: 1_000,
      retry: { maxAttempts: 3, initialDelayMs: 10 },
      answerFrom: 2,
    });
    const { clock, run } = payer(pay);
    await ticks();
    await clock.advance(1_000); // try 1 times out
    await clock.advance(10); // the backoff; try 2 answers at once
    expect(await standing(run)).not.toBe('pending');
    const result = await run;
    expect(pay.tries).toEqual({ p1: 2 });
    expect(pay.signals.p1?.[0]?.aborted).toBe(true);
    expect(pay.signals.p1?.[1]?.aborted).toBe(false);
    expect(toolAnswer(result.messages, 'p1')).toMatchObject({ content: { pay: 'x' } });
    expect(toolAnswer(result.messages, 'p1')).not.toHaveProperty('isError');
  });

  it('fails with TOOL_TIMEOUT, told to the model, when it is idempotent and its tries are spent', async () => {
    const pay = stallingTool('pay', { idempotent: true, timeoutMs: 1_000 });
    const { clock, run } = payer(pay);
    await ticks();
    await clock.advance(1_000);
    expect(await standing(run)).not.toBe('pending');
    const result = await run;
    expect(pay.tries).toEqual({ p1: 1 });
    expect(toolAnswer(result.messages, 'p1')).toMatchObject({
      isError: true,
      outcome: 'error',
      content: { error: 'TOOL_TIMEOUT', message: expect.stringContaining('1000 ms') },
    });
  });

  it('times out at 60 s when it sets no timeoutMs', async () => {
    const pay = stallingTool('pay');
    expect(pay.tool.timeoutMs).toBe(60_000);
    const { clock, run } = payer(pay);
    await ticks();
    await clock.advance(59_999);
    expect(await standing(run)).toBe('pending');
    await clock.advance(1);
    expect(await standing(run)).not.toBe('pending');
    expect(toolAnswer((await run).messages, 'p1')).toMatchObject({ outcome: 'unknown' });
  });
});

describe('a tool settling at its timeout', () => {
  it('settling at the very moment it times out: the timeout wins, once, and the value never reaches the model', async () => {
    const clock = createFakeClock();
    const store = memoryStore({ clock });
    let ran = 0;
    const pay = defineTool({
      name: 'pay',
      description: 'Pays, taking exactly its timeout.',
      input: z.object({ value: z.string() }),
      timeoutMs: 2_000,
      execute: async ({ value }) => {
        ran += 1;
        await clock.sleep(2_000);
        return { paid: value };
      },
    });
    const model = scriptedModel(oneCall);
    const agent = defineAgent({ name: 'payer', model, tools: [pay], durable: { store, clock } });
    const run = agent.execute('go', { runId: 'r' });
    await ticks();
    await clock.advance(2_000);
    expect(await standing(run)).not.toBe('pending');
    const result = await run;
    expect(ran).toBe(1);
    expect(toolAnswer(result.messages, 'p1')).toMatchObject({ outcome: 'unknown' });
    expect(JSON.stringify(model.calls)).not.toContain('paid');
    expect(JSON.stringify(await store.load('r'))).not.toContain('paid');
  });

  it('settled before its timeout while its write is in flight: the result stands, the timer is gone', async () => {
    const clock = createFakeClock();
    const inner = memoryStore({ clock });
    const held = gate();
    const holding = gate();
    const journal: string[] = [];
    const store = interceptWrites(inner, async (kind, args) => {
      if (kind !== 'append') return;
      const entries = args[1] as Array<{
        type: string;
        effectId: string;
        outcome?: { status: string };
      }>;
      journal.push(...entries.map((e) => `${e.type}:${e.effectId}:${e.outcome?.status ?? ''}`));
      // p1's settled mark (p2 still runs, so it is written at once): held in flight past p1's timeout.
      if (entries.some((e) => e.type === 'settled' && e.effectId.endsWith('/p1'))) {
        holding.open();
        await held.promise;
      }
    });
    const pay = stallingTool('pay', { timeoutMs: 3_000 });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: 'p1', name: 'pay', args: { value: 'a' } },
          { id: 'p2', name: 'pay', args: { value: 'b' } },
        ],
      },
      { text: 'done' },
    ]);
    const agent = defineAgent({
      name: 'payer',
      model,
      tools: [pay.tool],
      durable: { store, clock },
    });
    const run = agent.execute('go', { runId: 'r' });
    await ticks();
    await clock.advance(1_000);
    pay.gateOf('p1').open();
    await holding.promise;
    await clock.advance(5_000); // past both timeouts: p2 is abandoned, p1 had settled
    held.open();
    expect(await standing(run)).not.toBe('pending');
    const result = await run;
    expect(toolAnswer(result.messages, 'p1')).toMatchObject({ content: { pay: 'a', late: true } });
    expect(toolAnswer(result.messages, 'p2')).toMatchObject({ outcome: 'unknown' });
    expect(journal.filter((mark) => mark.includes('/p1'))).toEqual([
      'started:trip-0/tool/p1:',
      'settled:trip-0/tool/p1:ok',
    ]);
    expect(pay.signals.p1?.[0]?.aborted).toBe(false);
  });
});

describe('a planner node whose tool runs past its timeout', () => {
  it('is recorded unknown, never run again, and the unfinished part is replanned', async () => {
    const clock = createFakeClock();
    const store = memoryStore({ clock });
    const pay = stallingTool('pay', { timeoutMs: 1_000 });
    const look = stallingTool('look', { answerFrom: 1 });
    const node = (id: string, capability: string) => ({
      id,
      capability,
      input: { value: id },
      dependsOn: [],
    });
    const planner = definePlanner({
      name: 'payer',
      model: scriptedModel([
        { text: JSON.stringify({ nodes: [node('a', 'pay')] }) },
        { text: JSON.stringify({ nodes: [node('b', 'look')] }) },
      ]),
      capabilities: [
        { name: 'pay', description: 'Pays.', executable: pay.tool },
        { name: 'look', description: 'Looks it up.', executable: look.tool },
      ],
      maxReplans: 1,
      durable: { store, clock },
    });
    const run = planner.execute('pay', { runId: 'p' });
    await ticks();
    await clock.advance(1_000);
    expect(await standing(run)).not.toBe('pending');
    const result = await run;
    expect(result.nodes).toMatchObject([
      { id: 'a', status: 'unknown', error: { code: 'OUTCOME_UNKNOWN' } },
      { id: 'b', status: 'completed' },
    ]);
    expect(result.nodes[0]?.error?.message).toContain('1000 ms');
    expect(pay.tries).toEqual({ a: 1 });
  });
});

describe('defineTool', () => {
  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31])(
    'refuses timeoutMs %s',
    (timeoutMs) => {
      expect(() =>
        defineTool({
          name: 'bad',
          description: 'Bad.',
          input: z.object({}),
          timeoutMs,
          execute: () => null,
        }),
      ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    },
  );
});

describe('many tool calls in flight at once', () => {
  it('each with its own signal and timer, raise no listener-leak warning on the run’s signal', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const pay = stallingTool('pay', { answerFrom: 1 });
      const ids = Array.from({ length: 12 }, (_, i) => `p${i}`);
      const { run } = payer(pay, [
        { toolCalls: ids.map((id) => ({ id, name: 'pay', args: { value: id } })) },
        { text: 'done' },
      ]);
      await run;
      await ticks();
      expect(Object.keys(pay.tries)).toHaveLength(12);
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });
});
