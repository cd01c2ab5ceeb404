import {
  checkRunId,
  defineAgent,
  maxRunIdLength,
  memoryStore,
  type DurableStore,
} from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { describe, expect, it } from 'vitest';

const refused: Array<[string, string]> = [
  ['empty', ''],
  ['NUL', 'run-\u0000-x'],
  ['a lone high surrogate', 'lone-\ud800-surrogate'],
  ['a lone low surrogate', 'lone-\udbff-surrogate'.replace('\udbff', '\udc00')],
  ['longer than the maximum', 'x'.repeat(maxRunIdLength + 1)],
];
const kept = [
  'a',
  "o'brien; drop table runs; --",
  'Zürich/東京/😀',
  '../etc/passwd',
  'x'.repeat(maxRunIdLength),
];

/** A store that records every call, so a test can tell that a refused id reached none. */
function watched() {
  const store = memoryStore();
  const calls: string[] = [];
  const spy = new Proxy(store, {
    get(target, key) {
      const value = (target as unknown as Record<string | symbol, unknown>)[key];
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(String(key));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as DurableStore;
  return { store: spy, calls };
}

describe('run ids', () => {
  it.each(refused)(
    'refuses %s with INVALID_ARGUMENT before any store sees it',
    async (_why, runId) => {
      expect(() => checkRunId(runId)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      );
      const { store, calls } = watched();
      const agent = defineAgent({
        name: 'ids',
        model: scriptedModel([{ text: 'hi' }]),
        durable: { store },
      });
      await expect(agent.execute('go', { runId })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
      await expect(agent.resume(runId)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect(calls).toEqual([]);
    },
  );

  it.each(kept)('keeps %j as it is', async (runId) => {
    const store = memoryStore();
    const agent = defineAgent({
      name: 'ids',
      model: scriptedModel([{ text: 'hi' }]),
      durable: { store },
    });
    expect((await agent.execute('go', { runId })).runId).toBe(runId);
    expect((await store.load(runId))?.run.runId).toBe(runId);
  });

  it('tells two ids that differ only in a lone surrogate apart by refusing both', () => {
    expect(() => checkRunId('lone-\ud800-surrogate')).toThrow();
    expect(() => checkRunId('lone-\udbff-surrogate')).toThrow();
  });
});

describe('a run id belongs to one definition', () => {
  it('another definition given the id of a finished run is refused, and gets nothing of its output', async () => {
    const store = memoryStore();
    const a = defineAgent({
      name: 'a',
      model: scriptedModel([{ text: 'secret of a' }]),
      durable: { store },
    });
    const b = defineAgent({ name: 'b', model: scriptedModel([{ text: 'b' }]), durable: { store } });
    await a.execute('go', { runId: 'shared' });
    for (const attempt of [() => b.execute('go', { runId: 'shared' }), () => b.resume('shared')]) {
      const error = await attempt().catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect(JSON.stringify(error)).not.toContain('secret of a');
    }
    expect((await a.resume('shared')).output).toBe('secret of a');
  });
});
