import {
  CairnError,
  defineAgent,
  defineTool,
  memoryStore,
  type AgentResult,
  type Model,
  type ModelMessage,
} from '@cairn/sdk';
import { createFakeClock, scriptedModel } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * Runs an agent whose one tool throws `thrown` (or returns `returned`), then answers 'recovered'; returns the
 * run and the store.
 */
async function runThrowing(thrown: () => unknown, runId = 'hostile', returned?: () => unknown) {
  const clock = createFakeClock({ autoAdvance: true });
  const store = memoryStore({ clock });
  const agent = defineAgent({
    name: 'hostile',
    model: scriptedModel([
      { toolCalls: [{ id: 'c1', name: 'fragile', args: {} }] },
      { text: 'recovered' },
    ]),
    tools: [
      defineTool({
        name: 'fragile',
        description: 'Throws.',
        input: z.object({}),
        execute: () => {
          if (returned !== undefined) return returned();
          throw thrown();
        },
      }),
    ],
    durable: { store, clock },
  });
  const result = await agent.execute('go', { runId });
  return { result, store };
}

function toolAnswer(result: AgentResult<unknown>): Extract<ModelMessage, { role: 'tool' }> {
  const answer = result.messages.find((message) => message.role === 'tool');
  if (answer?.role !== 'tool') throw new Error('no tool answer');
  return answer;
}

describe('a tool that throws something that is not a Cairn error', () => {
  it('reports a plain Error to the model as TOOL_FAILED with its message', async () => {
    const { result } = await runThrowing(() => new Error('card declined'));
    expect(result.output).toBe('recovered');
    expect(toolAnswer(result)).toMatchObject({
      toolCallId: 'c1',
      isError: true,
      outcome: 'error',
      content: { error: 'TOOL_FAILED', message: 'card declined' },
    });
  });

  it('reports a thrown string to the model as TOOL_FAILED with the string as message', async () => {
    const { result } = await runThrowing(() => 'quota exceeded');
    expect(toolAnswer(result).content).toEqual({
      error: 'TOOL_FAILED',
      message: 'quota exceeded',
    });
  });

  it('reports a thrown object without a prototype as TOOL_FAILED instead of failing the run', async () => {
    const { result } = await runThrowing(() => {
      const value = Object.create(null) as Record<string, unknown>;
      value.reason = 'no prototype';
      return value;
    });
    expect(result.output).toBe('recovered');
    expect(toolAnswer(result).content).toEqual({
      error: 'TOOL_FAILED',
      message: '{"reason":"no prototype"}',
    });
  });

  it('reports an Error that is its own cause as TOOL_FAILED and keeps a finite stored chain', async () => {
    const { result, store } = await runThrowing(() => {
      const error = new Error('loops');
      error.cause = error;
      return error;
    });
    expect(toolAnswer(result).content).toEqual({ error: 'TOOL_FAILED', message: 'loops' });
    // The journaled error is JSON: its cause chain ends where it would start repeating itself.
    const stored = JSON.stringify(await store.load('hostile'));
    expect(stored.length).toBeLessThan(20_000);
  });

  it('reports an Error in a cause cycle of two as TOOL_FAILED', async () => {
    const { result } = await runThrowing(() => {
      const first = new Error('first');
      const second = new Error('second', { cause: first });
      first.cause = second;
      return first;
    });
    expect(toolAnswer(result).content).toEqual({ error: 'TOOL_FAILED', message: 'first' });
  });

  it('reports an Error whose message and name cannot be read as TOOL_FAILED', async () => {
    const { result } = await runThrowing(() => {
      const error = new Error('hidden');
      Object.defineProperty(error, 'message', {
        get: () => {
          throw new Error('no message for you');
        },
      });
      Object.defineProperty(error, 'name', { value: { not: 'a string' } });
      return error;
    });
    expect(result.output).toBe('recovered');
    expect(toolAnswer(result).content).toMatchObject({ error: 'TOOL_FAILED' });
  });

  it('reports a thrown Proxy whose every trap throws as TOOL_FAILED', async () => {
    const trap = () => {
      throw new Error('trapped');
    };
    const { result } = await runThrowing(
      () => new Proxy({}, { get: trap, getPrototypeOf: trap, ownKeys: trap, has: trap }),
    );
    expect(result.output).toBe('recovered');
    expect(toolAnswer(result).content).toMatchObject({ error: 'TOOL_FAILED' });
  });

  it('keeps the code of a CairnError whose data is not JSON, and drops the data', async () => {
    const { result, store } = await runThrowing(
      () =>
        new CairnError('TOOL_FAILED', 'bad data', {
          data: { big: 10n, fn: () => 1 } as never,
        }),
    );
    expect(toolAnswer(result).content).toEqual({ error: 'TOOL_FAILED', message: 'bad data' });
    expect((await store.load('hostile'))?.run.status).toBe('completed');
  });

  it('keeps the code a tool chose for a CairnError it throws', async () => {
    const { result } = await runThrowing(() => new CairnError('TOOL_INPUT_INVALID', 'no such sku'));
    expect(toolAnswer(result).content).toEqual({
      error: 'TOOL_INPUT_INVALID',
      message: 'no such sku',
    });
  });
});

describe('a tool that returns something that is not JSON', () => {
  it('reports a BigInt in the result as TOOL_FAILED', async () => {
    const { result } = await runThrowing(
      () => undefined,
      'r',
      () => ({ total: 10n }),
    );
    expect(result.output).toBe('recovered');
    expect(toolAnswer(result).content).toMatchObject({ error: 'TOOL_FAILED' });
  });

  it('reports a result that contains itself as TOOL_FAILED', async () => {
    const { result } = await runThrowing(
      () => undefined,
      'r',
      () => {
        const loop: Record<string, unknown> = {};
        loop.self = loop;
        return loop;
      },
    );
    expect(toolAnswer(result).content).toMatchObject({ error: 'TOOL_FAILED' });
  });
});

/** A model whose every call throws `thrown`. */
function throwingModel(thrown: unknown): Model {
  return {
    name: 'thrower',
    provider: 'test',
    generate: () => {
      throw thrown;
    },
  };
}

describe('a model that throws something that is not a Cairn error', () => {
  it('fails the run with MODEL_FAILED, a CairnError, for an object without a prototype', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const store = memoryStore({ clock });
    const agent = defineAgent({
      name: 'hostile-model',
      model: throwingModel(Object.create(null)),
      durable: { store, clock },
    });
    const error = await agent.execute('go', { runId: 'm' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CairnError);
    expect(error).toMatchObject({ code: 'MODEL_FAILED' });
    expect((await store.load('m'))?.run.status).toBe('failed');
  });

  it('fails the run with MODEL_FAILED for an Error that is its own cause', async () => {
    const error = new Error('provider loop');
    error.cause = error;
    const agent = defineAgent({ name: 'hostile-model', model: throwingModel(error) });
    await expect(agent.execute('go')).rejects.toMatchObject({
      code: 'MODEL_FAILED',
      message: expect.stringContaining('provider loop') as unknown,
    });
  });
});
