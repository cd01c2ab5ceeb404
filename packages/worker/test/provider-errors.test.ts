import { CairnError, defineAgent, definePlanner, defineTool, memoryStore } from '@cairn/sdk';
import { createFakeClock, scriptedModel } from '@cairn/testing';
import { createClient, createWorker } from '@cairn/worker';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

// Issue 19: a run ended by a provider error lost the provider's detail on the way to the caller.
const workers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.close()));
});

/** What `@cairn/ai-sdk` throws for a provider's HTTP error. */
function providerError(statusCode: 400 | 429): CairnError {
  const retryable = statusCode === 429;
  const data = { provider: 'openai.chat', model: 'gpt-x', statusCode };
  return new CairnError(
    'MODEL_FAILED',
    `openai.chat model "gpt-x" failed with HTTP ${statusCode}`,
    {
      retryable,
      data: retryable ? { ...data, retryAfterMs: 1500 } : data,
    },
  );
}

const echo = defineTool({
  name: 'echo',
  description: 'Echo a value.',
  input: z.object({ value: z.string() }),
  execute: ({ value }) => value,
});

describe.each([400, 429] as const)(
  'a worker running into HTTP %s from the provider',
  (statusCode) => {
    it.each(['agent', 'planner'] as const)(
      'reports the %s failed with the provider detail in MODEL_FAILED and its cause',
      async (kind) => {
        const clock = createFakeClock({ autoAdvance: true });
        const store = memoryStore({ clock });
        const model = scriptedModel(() => ({ error: providerError(statusCode) }));
        const durable = { store, clock };
        const agent = defineAgent({ name: 'asker', model, durable });
        const planner = definePlanner({
          name: 'plans',
          model,
          capabilities: [{ name: 'echo', description: 'Echo a value.', executable: echo }],
          durable,
        });
        const client = createClient({ store });
        const { runId } = await client.start(kind === 'agent' ? agent : planner, 'go');
        const worker = createWorker({
          store,
          clock,
          agents: [agent],
          planners: [planner],
          pollMs: 5,
          shutdownSignals: [],
        });
        workers.push(worker);
        await worker.start();
        const error = await client.result(runId, { pollMs: 5 }).catch((e: unknown) => e);
        const detail = { provider: 'openai.chat', model: 'gpt-x', statusCode };
        expect(error).toBeInstanceOf(CairnError);
        expect(error).toMatchObject({ code: 'MODEL_FAILED', data: detail });
        expect((error as Error).cause).toMatchObject({
          code: 'MODEL_FAILED',
          retryable: statusCode === 429,
          data: statusCode === 429 ? { ...detail, retryAfterMs: 1500 } : detail,
        });
        expect(model.calls).toHaveLength(statusCode === 429 ? 3 : 1);
      },
    );
  },
);
