import {
  AgentDriftError,
  CairnError,
  defineAgent,
  LeaseLostError,
  memoryStore,
  OutputValidationError,
  RunNotFoundError,
  RunSuspendedError,
  type AnyTool,
  type DurableStore,
  type Model,
} from '@cairn/sdk';
import {
  createFakeClock,
  scriptedModel,
  SimulatedCrash,
  type ScriptedModel,
  type ScriptedTurn,
} from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { countingTool, flakyStore } from './helpers.js';

const twoTrips: ScriptedTurn[] = [
  {
    toolCalls: [{ id: 'a1', name: 'alpha', args: { value: 'x' } }],
    usage: { inputTokens: 10, outputTokens: 1 },
  },
  {
    toolCalls: [{ id: 'a2', name: 'alpha', args: { value: 'y' } }],
    usage: { inputTokens: 20, outputTokens: 2 },
  },
  { text: 'done', usage: { inputTokens: 30, outputTokens: 3 } },
];

function setup(
  options: { store?: DurableStore; script?: ScriptedTurn[]; tools?: AnyTool[]; model?: Model } = {},
) {
  const clock = createFakeClock({ autoAdvance: true });
  const store = options.store ?? memoryStore({ clock });
  const alpha = countingTool('alpha');
  // Tests that pass their own model do not read `calls`.
  const model = (options.model ?? scriptedModel(options.script ?? twoTrips)) as ScriptedModel;
  const make = (extra: Partial<Parameters<typeof defineAgent>[0]> = {}) =>
    defineAgent({
      name: 'assistant',
      model,
      tools: options.tools ?? [alpha.tool],
      system: 'Be brief.',
      maxTrips: 5,
      durable: { store, clock, leaseMs: 10_000 },
      ...extra,
    });
  return { clock, store, alpha, model, make };
}

/** Crashes the run at the first boundary matching `where`. */
function crashWhere(where: (point: string, effectId?: string) => boolean) {
  return {
    onBoundary: (b: { point: string; effectId?: string }) => {
      if (where(b.point, b.effectId)) throw new SimulatedCrash(b as never);
    },
  };
}

describe('an agent run', () => {
  it('calls tools, counts usage and returns the final answer', async () => {
    const { make, alpha, store } = setup();
    const result = await make().execute('go', { runId: 'r1' });
    expect(result.output).toBe('done');
    expect(result.trips).toBe(3);
    expect(result.usage).toEqual({ inputTokens: 60, outputTokens: 6, totalTokens: 66 });
    expect(alpha.calls).toEqual({ a1: 1, a2: 1 });
    expect(result.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);
    const stored = await store.load('r1');
    expect(stored?.run.status).toBe('completed');
    expect(stored?.run.output).toBe('done');
  });

  it('sends the system prompt, tool schemas and the response schema to the model', async () => {
    const model = scriptedModel([{ text: '{"answer":42}' }]);
    const { make } = setup({ model });
    const result = await make({ output: z.object({ answer: z.number() }) }).execute('q');
    expect(result.output).toEqual({ answer: 42 });
    const request = model.calls[0]!;
    expect(request.messages[0]).toEqual({ role: 'system', content: 'Be brief.' });
    expect(request.tools[0]?.name).toBe('alpha');
    expect(request.tools[0]?.inputSchema).toMatchObject({
      type: 'object',
      properties: { value: { type: 'string' } },
    });
    expect(request.responseSchema).toMatchObject({
      type: 'object',
      properties: { answer: { type: 'number' } },
    });
  });

  it('runs without a durable store, but cannot be resumed', async () => {
    const model = scriptedModel([{ text: 'hi' }]);
    const agent = defineAgent({ name: 'plain', model });
    expect((await agent.execute('hello')).output).toBe('hi');
    await expect(agent.resume('any')).rejects.toMatchObject({ code: 'STORE_REQUIRED' });
  });
});

describe('resume', () => {
  it('continues from the last checkpoint without repeating settled tools or model calls', async () => {
    const { make, alpha, model, clock } = setup();
    await expect(
      make().execute('go', {
        runId: 'r',
        ...crashWhere((p, id) => p === 'effect.before' && id === 'trip-2/model'),
      }),
    ).rejects.toBeInstanceOf(SimulatedCrash);
    const callsAtCrash = model.calls.length;
    // The crashed process's lease is still held until it runs out.
    await expect(make().resume('r')).rejects.toMatchObject({ code: 'LEASE_HELD' });
    await clock.advance(10_001);
    const result = await make().resume('r');
    expect(result.output).toBe('done');
    expect(result.resumed).toBe(true);
    expect(alpha.calls).toEqual({ a1: 1, a2: 1 });
    expect(model.calls.length).toBe(callsAtCrash + 1);
    expect(result.usage.totalTokens).toBe(66);
  });

  it('throws RunNotFoundError for an unknown run id', async () => {
    const { make } = setup();
    const error = await make()
      .resume('nope')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunNotFoundError);
    expect(error).toMatchObject({ code: 'RUN_NOT_FOUND', runId: 'nope' });
  });

  it('returns a completed run at once and performs nothing', async () => {
    const { make, model, alpha } = setup();
    const first = await make().execute('go', { runId: 'done-run' });
    const calls = model.calls.length;
    const effects: string[] = [];
    const again = await make().resume('done-run', {
      onBoundary: (b) => void effects.push(b.point),
    });
    expect(again.output).toBe(first.output);
    expect(again.usage).toEqual(first.usage);
    expect(effects).toEqual([]);
    expect(model.calls.length).toBe(calls);
    expect(alpha.calls).toEqual({ a1: 1, a2: 1 });
    // Executing the same run id again is the same short-circuit.
    expect((await make().execute('other input', { runId: 'done-run' })).output).toBe('done');
    expect(model.calls.length).toBe(calls);
  });

  it('deletes the run on completion with deleteOnComplete', async () => {
    const { make, store, clock } = setup();
    const agent = make({ durable: { store, clock, deleteOnComplete: true } });
    await agent.execute('go', { runId: 'gone' });
    expect(await store.load('gone')).toBeUndefined();
    await expect(agent.resume('gone')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
  });

  it('detects drift before anything runs, and proceeds with force', async () => {
    const { make, model, alpha, clock } = setup();
    await expect(
      make().execute('go', {
        runId: 'drift',
        ...crashWhere((p, id) => p === 'effect.before' && id === 'trip-1/model'),
      }),
    ).rejects.toBeInstanceOf(SimulatedCrash);
    await clock.advance(20_000);
    const calls = model.calls.length;
    const beta = countingTool('beta');
    const changed = make({ tools: [alpha.tool, beta.tool] });
    const original = make();

    const error = await changed.resume('drift').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentDriftError);
    expect(error).toMatchObject({
      code: 'AGENT_DRIFT',
      runId: 'drift',
      stored: original.signature,
      current: changed.signature,
    });
    expect(model.calls.length).toBe(calls);

    const forced = await changed.resume('drift', { force: true });
    expect(forced.output).toBe('done');
    expect(alpha.calls).toEqual({ a1: 1, a2: 1 });
  });

  it('does not count the system prompt as drift', async () => {
    const { make } = setup();
    expect(make({ system: 'Something else.' }).signature).toBe(make().signature);
    expect(make({ maxTrips: 9 }).signature).not.toBe(make().signature);
    expect(make({ version: 2 }).signature).not.toBe(make().signature);
  });
});

describe('tool calls the model gets wrong', () => {
  it('answers invalid arguments and unknown tools with an error result and goes on', async () => {
    const { make, alpha } = setup({
      script: [
        {
          toolCalls: [
            { id: 'bad', name: 'alpha', args: { value: 42 } },
            { id: 'missing', name: 'nope', args: {} },
            { id: 'good', name: 'alpha', args: { value: 'ok' } },
          ],
        },
        { text: 'recovered' },
      ],
    });
    const result = await make().execute('go');
    expect(result.output).toBe('recovered');
    expect(alpha.calls).toEqual({ good: 1 });
    const answers = result.messages.filter((m) => m.role === 'tool');
    expect(answers).toMatchObject([
      { toolCallId: 'bad', isError: true, content: { error: 'TOOL_INPUT_INVALID' } },
      { toolCallId: 'missing', isError: true, content: { error: 'TOOL_NOT_FOUND' } },
      { toolCallId: 'good', content: { alpha: 'ok' } },
    ]);
  });

  it('reports a tool that throws to the model as an error result', async () => {
    const { make } = setup({
      script: [{ toolCalls: [{ id: 't', name: 'boom', args: {} }] }, { text: 'ok' }],
    });
    const boom: AnyTool = {
      name: 'boom',
      description: 'fails',
      input: z.object({}),
      idempotent: false,
      retry: undefined,
      execute: () => {
        throw new Error('disk full');
      },
    };
    const result = await make({ tools: [boom] }).execute('go');
    expect(result.messages.find((m) => m.role === 'tool')).toMatchObject({
      isError: true,
      content: { message: 'disk full' },
    });
  });
});

describe('failures', () => {
  it('fails with OutputValidationError when the answer does not match the output schema', async () => {
    const { make, store } = setup({ script: [{ text: '{"answer":"forty-two"}' }] });
    const error = await make({ output: z.object({ answer: z.number() }) })
      .execute('q', { runId: 'bad-output' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutputValidationError);
    expect(error).toMatchObject({ code: 'OUTPUT_INVALID' });
    const stored = await store.load('bad-output');
    expect(stored?.run.status).toBe('failed');
    expect(stored?.run.error?.code).toBe('OUTPUT_INVALID');
    // Resuming a failed run rethrows the same typed error.
    await expect(
      make({ output: z.object({ answer: z.number() }) }).resume('bad-output'),
    ).rejects.toBeInstanceOf(OutputValidationError);
  });

  it('fails with MAX_TRIPS_EXCEEDED when the model never answers', async () => {
    const { make } = setup({ script: Array.from({ length: 9 }, () => twoTrips[0]!) });
    await expect(make({ maxTrips: 2 }).execute('loop')).rejects.toMatchObject({
      code: 'MAX_TRIPS_EXCEEDED',
    });
  });

  it('retries a retryable model error and fails on a non-retryable one', async () => {
    let attempts = 0;
    const flaky = scriptedModel((_request, turn) => {
      attempts += 1;
      return attempts === 1
        ? { error: new CairnError('MODEL_FAILED', 'overloaded', { retryable: true }) }
        : { text: `turn ${turn}` };
    });
    expect((await setup({ model: flaky }).make().execute('go')).output).toBe('turn 0');
    expect(attempts).toBe(2);

    const broken = scriptedModel([{ error: new CairnError('MODEL_FAILED', 'bad request') }]);
    const { make, store } = setup({ model: broken });
    const error = await make()
      .execute('go', { runId: 'model-broke' })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'MODEL_FAILED' });
    expect((await store.load('model-broke'))?.run.status).toBe('failed');
  });

  it('rejects a malformed model response with a typed error', async () => {
    const model: Model = {
      name: 'm',
      provider: 'p',
      generate: async () => ({ nonsense: true }) as never,
    };
    await expect(setup({ model }).make().execute('go')).rejects.toMatchObject({
      code: 'MODEL_FAILED',
    });
  });

  it.each([
    ['a Date', { when: new Date(0) }],
    ['NaN', { n: Number.NaN }],
    ['JSON 300 levels deep', JSON.parse('['.repeat(300) + ']'.repeat(300)) as unknown],
  ])('rejects tool arguments that are not JSON (%s) with MODEL_FAILED', async (_what, args) => {
    const model: Model = {
      name: 'm',
      provider: 'p',
      generate: async () =>
        ({
          message: { role: 'assistant', content: '' },
          toolCalls: [{ id: 'c1', name: 'add', args }],
          usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
        }) as never,
    };
    await expect(setup({ model }).make().execute('go')).rejects.toMatchObject({
      code: 'MODEL_FAILED',
      message: expect.stringContaining('Expected a JSON value'),
    });
  });

  it('drops an undefined property of a tool call’s arguments, as JSON does, and runs the tool', async () => {
    let turn = 0;
    const model: Model = {
      name: 'm',
      provider: 'p',
      generate: async () =>
        turn++ === 0
          ? {
              message: { role: 'assistant', content: '' },
              // As an untyped model (or a provider adapter) may build it.
              toolCalls: [
                { id: 'c1', name: 'alpha', args: { value: 'x', note: undefined } as never },
              ],
              usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
            }
          : {
              message: { role: 'assistant', content: 'done' },
              toolCalls: [],
              usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
            },
    };
    const { make, alpha } = setup({ model });
    const result = await make().execute('go');
    expect(result.output).toBe('done');
    expect(alpha.calls).toEqual({ c1: 1 });
    const assistant = result.messages.find((m) => m.role === 'assistant' && m.toolCalls);
    expect(assistant).toMatchObject({ toolCalls: [{ id: 'c1', args: { value: 'x' } }] });
    expect(JSON.stringify(assistant)).not.toContain('note');
  });

  it('ends cancelled when its signal aborts, keeping its checkpoint', async () => {
    const controller = new AbortController();
    const { make, store } = setup({
      script: [{ toolCalls: [{ id: 'slow', name: 'wait', args: {} }] }, { text: 'never' }],
    });
    const wait: AnyTool = {
      name: 'wait',
      description: 'waits until aborted',
      input: z.object({}),
      idempotent: false,
      retry: undefined,
      execute: (_args, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => reject(new Error('aborted')));
          controller.abort(new Error('user cancelled'));
        }),
    };
    const error = await make({ tools: [wait] })
      .execute('go', { runId: 'cancel-me', signal: controller.signal })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'RUN_CANCELLED' });
    const stored = await store.load('cancel-me');
    expect(stored?.run.status).toBe('cancelled');
    expect(stored?.run.snapshot).not.toBeNull();
  });

  it('rejects a malformed snapshot with SNAPSHOT_INVALID and keeps it', async () => {
    const { make, store } = setup();
    await store.create({
      runId: 'corrupt',
      kind: 'agent',
      name: 'assistant',
      signature: make().signature,
      snapshot: { format: 1, state: { nope: true }, pending: null, journalSeq: 0 },
    });
    await expect(make().resume('corrupt')).rejects.toMatchObject({ code: 'SNAPSHOT_INVALID' });
    expect((await store.load('corrupt'))?.run.snapshot).toEqual({
      format: 1,
      state: { nope: true },
      pending: null,
      journalSeq: 0,
    });
  });
});

describe('fencing', () => {
  it('rejects every write made with a stale epoch', async () => {
    const clock = createFakeClock();
    const store = memoryStore({ clock });
    await store.create({ runId: 'f', kind: 'agent', name: 'a', signature: 's', snapshot: null });
    const first = (await store.acquire('f', { owner: 'one', ttlMs: 1_000 }))!;
    expect(await store.acquire('f', { owner: 'two', ttlMs: 1_000 })).toBeUndefined();
    await clock.advance(1_001);
    const second = (await store.acquire('f', { owner: 'two', ttlMs: 1_000 }))!;
    expect(second.epoch).toBe(first.epoch + 1);
    const checkpoint = { status: 'running' as const, signature: 's', snapshot: {}, journalSeq: 0 };
    await expect(store.save(first, checkpoint)).rejects.toBeInstanceOf(LeaseLostError);
    await expect(
      store.append(first, [{ seq: 1, type: 'started', effectId: 'e', at: 0 }]),
    ).rejects.toBeInstanceOf(LeaseLostError);
    await expect(store.updateStatus(first, { status: 'suspended' })).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    await expect(store.renew(first, 1_000)).rejects.toBeInstanceOf(LeaseLostError);
    await store.save(second, checkpoint);
  });

  it('stops a holder that lost its lease: it starts nothing more and writes nothing', async () => {
    const storeClock = createFakeClock();
    const store = memoryStore({ clock: storeClock });
    const frozenClock = createFakeClock(); // the first holder's heartbeat never fires: it is frozen
    let release: () => void = () => undefined;
    const model = scriptedModel([
      { toolCalls: [{ id: 'pay', name: 'pay', args: {} }] },
      { toolCalls: [{ id: 'ship', name: 'ship', args: {} }] },
      { text: 'done' },
    ]);
    const ran: string[] = [];
    const tools: AnyTool[] = ['pay', 'ship'].map((name) => ({
      name,
      description: name,
      input: z.object({}),
      idempotent: false,
      retry: undefined,
      execute: async () => {
        ran.push(name);
        if (name === 'pay' && ran.length === 1)
          await new Promise<void>((resolve) => (release = resolve));
        return { ok: true };
      },
    }));
    const agent = (clock: typeof storeClock) =>
      defineAgent({ name: 'shop', model, tools, durable: { store, clock, leaseMs: 1_000 } });

    const frozen = agent(frozenClock).execute('buy', { runId: 'shop-1' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(ran).toEqual(['pay']);
    await storeClock.advance(1_001); // the frozen holder's lease runs out on the store's clock
    const survivor = await agent(storeClock).resume('shop-1');
    expect(survivor.output).toBe('done');

    release(); // the frozen holder wakes up and tries to journal its result
    await expect(frozen).rejects.toBeInstanceOf(LeaseLostError);
    expect(ran).toEqual(['pay', 'ship']);
    expect(survivor.messages.find((m) => m.role === 'tool')).toMatchObject({
      toolCallId: 'pay',
      outcome: 'unknown',
    });
  });
});

describe('a store that keeps failing', () => {
  it('suspends the run with its last good checkpoint kept, and it resumes when the store is back', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const inner = memoryStore({ clock });
    let down = false;
    const store = flakyStore(
      inner,
      (operation) => down && operation !== 'updateStatus',
      () => new CairnError('STORE_UNAVAILABLE', 'connection refused', { retryable: true }),
    );
    const { make, alpha } = setup({ store });
    const agent = make({ durable: { store, clock, storeRetry: { maxAttempts: 4 } } });
    let checkpoints = 0;
    const error = await agent
      .execute('go', {
        runId: 'flaky',
        onBoundary: (b) => {
          if (b.point === 'checkpoint.after' && ++checkpoints === 2) down = true;
        },
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunSuspendedError);
    expect(error).toMatchObject({ code: 'RUN_SUSPENDED', cause: { code: 'STORE_UNAVAILABLE' } });
    const stored = await inner.load('flaky');
    expect(stored?.run.status).toBe('suspended');
    expect(stored?.run.snapshot).toMatchObject({ state: { trips: 1 } });
    expect(alpha.calls).toEqual({ a1: 1 });

    down = false;
    const resumed = await agent.resume('flaky');
    expect(resumed.output).toBe('done');
    expect(alpha.calls).toEqual({ a1: 1, a2: 1 });
    expect((await inner.load('flaky'))?.run.status).toBe('completed');
  });

  it('keeps the checkpoint when even the status cannot be written', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const inner = memoryStore({ clock });
    let down = false;
    const store = flakyStore(
      inner,
      () => down,
      () => new Error('ECONNRESET'),
    );
    const { make } = setup({ store });
    const agent = make({ durable: { store, clock, storeRetry: { maxAttempts: 3 } } });
    const error = await agent
      .execute('go', {
        runId: 'down',
        onBoundary: (b) => void (b.point === 'effect.after' && (down = true)),
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunSuspendedError);
    const stored = await inner.load('down');
    expect(stored?.run.status).toBe('running');
    expect(stored?.run.snapshot).toMatchObject({ state: { trips: 0 } });
  });
});
