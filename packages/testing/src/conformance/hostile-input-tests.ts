import {
  childRunId,
  defineAgent,
  definePlanner,
  defineTool,
  maxRunIdLength,
  type DurableStore,
  type ModelMessage,
} from '@cairn/sdk';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../scripted-model.js';
import { newRun, type ConformanceContext } from './context.js';

/** Run ids every store keeps exactly as given. */
const keptIds = [
  'o\'brien "quoted"',
  "'; drop table runs; --",
  'Zürich/東京/😀',
  'a/b/c',
  '../../etc/passwd',
  ' ',
  'x'.repeat(maxRunIdLength),
];

/** Run ids no store sees: refused with INVALID_ARGUMENT before any call. */
const refusedIds: Array<[string, unknown]> = [
  ['empty', ''],
  ['with a NUL', 'run-\u0000-x'],
  ['with a lone high surrogate', 'lone-\ud800-x'],
  ['with a lone low surrogate', 'lone-\udc00-x'],
  ['too long', 'x'.repeat(maxRunIdLength + 1)],
  ['not a string', 42],
];

/** An agent that answers with `answer`, calling `echo` first when `calls` is given. */
function echoAgent(store: DurableStore, options: { calls?: number; answer?: string } = {}) {
  const ran = new Map<string, number>();
  const echo = defineTool({
    name: 'echo',
    description: 'Echoes.',
    input: z.object({ n: z.number() }),
    execute: ({ n }, ctx) => {
      const key = `${ctx.runId} ${ctx.toolCallId}`;
      ran.set(key, (ran.get(key) ?? 0) + 1);
      return n;
    },
  });
  const calls = options.calls ?? 0;
  const model = scriptedModel(
    (_request, turn) =>
      turn === 0 && calls > 0
        ? {
            toolCalls: Array.from({ length: calls }, (_, n) => ({
              id: `c${n}`,
              name: 'echo',
              args: { n },
            })),
          }
        : { text: options.answer ?? 'done' },
    { recordCalls: false },
  );
  return { agent: defineAgent({ name: 'hostile', model, tools: [echo], durable: { store } }), ran };
}

const userInput = (messages: readonly ModelMessage[]) =>
  messages.find((message) => message.role === 'user')?.content;

/**
 * Input an attacker chooses, through the public API on this store (issue 16): what must pass passes exactly,
 * what must not is refused with a typed error before the store sees it, and no run touches another.
 */
export function hostileInputTests(ctx: ConformanceContext): void {
  it('keeps run ids with quotes, SQL, unicode, slashes, ../ and the maximum length apart and exact', async () => {
    const store = await ctx.store();
    const { agent } = echoAgent(store);
    for (const runId of keptIds) {
      const result = await agent.execute(`input of ${runId}`, { runId });
      expect(result.runId).toBe(runId);
    }
    for (const runId of keptIds) {
      const loaded = await store.load(runId);
      expect(loaded?.run.runId).toBe(runId);
      const state = (loaded?.run.snapshot as { state: { messages: ModelMessage[] } }).state;
      expect(userInput(state.messages)).toBe(`input of ${runId}`);
    }
  });

  it.each(refusedIds)(
    'refuses a run id %s with INVALID_ARGUMENT, and stores nothing',
    async (_why, runId) => {
      const store = await ctx.store();
      const { agent } = echoAgent(store);
      const bystander = newRun();
      await store.create(bystander);
      await expect(agent.execute('go', { runId: runId as string })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
      await expect(agent.resume(runId as string)).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
      expect((await store.list()).map((run) => run.runId)).toEqual([bystander.runId]);
    },
  );

  // Its own timeout: 10 MB through a store takes 15 to 30 s on a loaded two-core machine, and it checks bytes.
  it('takes a 10 MB input and a 10 MB answer, and gives them back exactly', async () => {
    const store = await ctx.store();
    // 10 million UTF-16 code units of text in three scripts (more in UTF-8).
    const big = (seed: string) => `${seed}:${'é🙂x'.repeat(2_500_000)}`;
    const { agent } = echoAgent(store, { answer: big('answer') });
    const result = await agent.execute(big('input'), { runId: newRun().runId });
    expect(result.output).toBe(big('answer'));
    const state = (
      (await store.load(result.runId))?.run.snapshot as { state: { messages: ModelMessage[] } }
    ).state;
    expect(userInput(state.messages)).toBe(big('input'));
  }, 120_000);

  it('runs 10,000 tool calls of one turn once each', async () => {
    const store = await ctx.store();
    const { agent, ran } = echoAgent(store, { calls: 10_000 });
    const result = await agent.execute('many', { runId: newRun().runId });
    expect(result.output).toBe('done');
    expect(ran.size).toBe(10_000);
    expect([...ran.values()].every((count) => count === 1)).toBe(true);
  });

  it('tells the model, with a typed error, of a tool result that is not JSON (BigInt, cycle, function)', async () => {
    const store = await ctx.store();
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const results: Record<string, unknown> = { big: 10n, cycle, fn: () => 1 };
    const tools = Object.keys(results).map((name) =>
      defineTool({
        name,
        description: name,
        input: z.object({}),
        execute: () => results[name] as never,
      }),
    );
    const model = scriptedModel((_request, turn) =>
      turn === 0
        ? { toolCalls: Object.keys(results).map((name, i) => ({ id: `c${i}`, name, args: {} })) }
        : { text: 'coped' },
    );
    const agent = defineAgent({ name: 'not-json', model, tools, durable: { store } });
    const result = await agent.execute('go', { runId: newRun().runId });
    expect(result.output).toBe('coped');
    const answers = result.messages.filter((message) => message.role === 'tool');
    expect(answers).toHaveLength(3);
    for (const answer of answers) {
      expect(answer).toMatchObject({
        isError: true,
        content: { error: 'TOOL_FAILED', message: expect.stringMatching(/JSON|BigInt|circular/i) },
      });
    }
  });

  it('keeps child runs where no caller-chosen run id reaches: a squatter is neither adopted nor disturbed', async () => {
    const store = await ctx.store();
    const victim = newRun().runId;
    const { agent: concierge, ran } = echoAgent(store, { calls: 1, answer: 'booked' });
    // A caller creates a run first under the id a planner node's child once had...
    const squatterId = `${victim}/hotel`;
    const squatter = await concierge.execute('squat', { runId: squatterId });
    const squatterRow = await store.load(squatterId);
    // ...and cannot create one under the id it has now.
    await expect(
      concierge.execute('squat', { runId: childRunId(victim, 'hotel') }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });

    const plan = {
      nodes: [{ id: 'hotel', capability: 'concierge', input: 'book', dependsOn: [] }],
    };
    const planner = definePlanner({
      name: 'trip',
      model: scriptedModel([{ text: JSON.stringify(plan) }]),
      capabilities: [{ name: 'concierge', description: 'Books.', executable: concierge }],
      durable: { store },
    });
    const result = await planner.execute('trip', { runId: victim });
    expect(result.nodes.map((node) => [node.id, node.status])).toEqual([['hotel', 'completed']]);
    expect(result.nodes[0]?.child?.runId).toBe(childRunId(victim, 'hotel'));
    // The squatter's tool call and the child's, once each.
    expect(Object.fromEntries(ran)).toEqual({
      [`${squatterId} c0`]: 1,
      [`${childRunId(victim, 'hotel')} c0`]: 1,
    });
    expect((await store.load(childRunId(victim, 'hotel')))?.run).toMatchObject({
      status: 'completed',
      rootRunId: victim,
    });
    expect(squatter.output).toBe('booked');
    expect(await store.load(squatterId)).toEqual(squatterRow);
  });
}
