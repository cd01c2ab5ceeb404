import {
  CairnError,
  defineAgent,
  defineTool,
  isCairnError,
  memoryStore,
  type DurableStore,
} from '@cairn/sdk';
import { createFakeClock, scriptedModel } from '@cairn/testing';
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

describe('a run that stops early rejects with a CairnError', () => {
  it('cancelled with a plain Error reason while a tool waits to be retried: RUN_CANCELLED', async () => {
    const clock = createFakeClock();
    const agent = agentOn(memoryStore({ clock }), clock);
    const controller = new AbortController();
    const run = rejection(agent.execute('go', { runId: 'c1', signal: controller.signal }));
    await ticks();
    controller.abort(new Error('user pressed stop'));
    const error = await run;
    expect(isCairnError(error)).toBe(true);
    expect(error).toMatchObject({ code: 'RUN_CANCELLED' });
  });

  it('cancelled while its checkpoint waits to be retried (store down): RUN_CANCELLED', async () => {
    const clock = createFakeClock();
    const { store, state } = downStore(memoryStore({ clock }));
    const agent = agentOn(store, clock);
    const controller = new AbortController();
    state.down = true;
    const run = rejection(agent.execute('go', { runId: 'c2', signal: controller.signal }));
    await ticks();
    controller.abort(new Error('user pressed stop'));
    const error = await run;
    expect(isCairnError(error)).toBe(true);
    expect(error).toMatchObject({ code: expect.stringMatching(/RUN_CANCELLED|RUN_SUSPENDED/) });
  });

  it('lease lost (renewals refused) while writes fail retryably: LEASE_LOST', async () => {
    const clock = createFakeClock();
    const inner = memoryStore({ clock });
    const { store, state } = downStore(inner);
    const agent = agentOn(store, clock);
    const run = rejection(agent.execute('go', { runId: 'c3' }));
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
});
