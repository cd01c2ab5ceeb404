import {
  CairnError,
  defineAgent,
  defineTool,
  isCairnError,
  memoryStore,
  type DurableStore,
} from '@cairn/sdk';
import { createFakeClock, scriptedModel, SimulatedCrash, type FakeClock } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ticks } from './interleave.js';

/**
 * Every way a run stops early, through execute and resume: the rejection is always a CairnError with the code
 * that names what happened (issue 15, point 3: `Error('lease-lost')` and abort reasons escaped).
 */
function flakyTool(failures: number) {
  let calls = 0;
  return defineTool({
    name: 'flaky',
    description: 'Fails retryably a few times.',
    input: z.object({}),
    retry: { maxAttempts: 10, initialDelayMs: 1_000, maxDelayMs: 1_000 },
    execute: async () => {
      calls += 1;
      if (calls <= failures) throw new CairnError('TOOL_FAILED', 'not yet', { retryable: true });
      return 'ok';
    },
  });
}

function agentOn(store: DurableStore, clock = createFakeClock()) {
  return defineAgent({
    name: 'rejecting',
    model: scriptedModel([
      { toolCalls: [{ id: 'f1', name: 'flaky', args: {} }] },
      { text: 'done' },
    ]),
    tools: [flakyTool(5)],
    durable: {
      store,
      clock,
      storeRetry: { maxAttempts: 50, initialDelayMs: 1_000, maxDelayMs: 1_000 },
    },
  });
}

/** Stores whose writes fail retryably (as a restarting server's do) once `down` is set. */
function downStore(store: DurableStore) {
  const state = { down: false };
  const fail = () => {
    throw new CairnError('STORE_UNAVAILABLE', 'connection refused', { retryable: true });
  };
  const flaky: DurableStore = {
    ...store,
    save: async (...args) => (state.down ? fail() : store.save(...args)),
    append: async (...args) => (state.down ? fail() : store.append(...args)),
    renew: async (...args) => (state.down ? fail() : store.renew(...args)),
  };
  return { store: flaky, state };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => 'resolved',
    (error: unknown) => error,
  );
}

type Path = 'execute' | 'resume';

/**
 * Gets a run ready for `path` and returns what starts it: `execute` starts it anew; `resume` continues one
 * whose first attempt died before its tool ran (and whose lease ran out), so the resumed attempt meets the
 * failing tool as the first one would have.
 */
async function prepare(
  path: Path,
  store: DurableStore,
  clock: FakeClock,
  runId: string,
): Promise<(signal?: AbortSignal) => Promise<unknown>> {
  if (path === 'execute')
    return (signal) =>
      rejection(agentOn(store, clock).execute('go', { runId, ...(signal ? { signal } : {}) }));
  const died = await rejection(
    agentOn(store, clock).execute('go', {
      runId,
      onBoundary: (boundary) => {
        if (boundary.point === 'effect.before') throw new SimulatedCrash(boundary);
      },
    }),
  );
  expect(died).toBeInstanceOf(SimulatedCrash);
  await clock.advance(31_000);
  return (signal) => rejection(agentOn(store, clock).resume(runId, signal ? { signal } : {}));
}

describe.each<Path>(['execute', 'resume'])(
  'a run that stops early rejects with a CairnError (%s)',
  (path) => {
    it('cancelled with a plain Error reason while a tool waits to be retried: RUN_CANCELLED', async () => {
      const clock = createFakeClock();
      const store = memoryStore({ clock });
      const start = await prepare(path, store, clock, 'c1');
      const controller = new AbortController();
      const run = start(controller.signal);
      await ticks();
      controller.abort(new Error('user pressed stop'));
      const error = await run;
      expect(isCairnError(error)).toBe(true);
      expect(error).toMatchObject({ code: 'RUN_CANCELLED' });
    });

    it('cancelled while its checkpoint waits to be retried (store down): RUN_CANCELLED', async () => {
      const clock = createFakeClock();
      const { store, state } = downStore(memoryStore({ clock }));
      const start = await prepare(path, store, clock, 'c2');
      const controller = new AbortController();
      state.down = true;
      const run = start(controller.signal);
      await ticks();
      controller.abort(new Error('user pressed stop'));
      const error = await run;
      expect(isCairnError(error)).toBe(true);
      expect(error).toMatchObject({ code: expect.stringMatching(/RUN_CANCELLED|RUN_SUSPENDED/) });
    });

    it('lease lost (renewals refused) while writes fail retryably: LEASE_LOST', async () => {
      const clock = createFakeClock();
      const { store, state } = downStore(memoryStore({ clock }));
      const start = await prepare(path, store, clock, 'c3');
      const run = start();
      await ticks();
      state.down = true;
      // Time passes past the lease: the renewals fail, the writes wait in their backoff.
      for (let i = 0; i < 20; i += 1) {
        await clock.advance(5_000);
        await ticks();
      }
      const error = await run;
      expect(isCairnError(error)).toBe(true);
      expect((error as CairnError).code).toMatch(/LEASE_LOST|RUN_SUSPENDED/);
    });
  },
);
