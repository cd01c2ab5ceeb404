import { defineAgent, defineTool, waitUntilTool, type DurableStore, type Clock } from '@cairn/sdk';
import { scriptedModel, type Script } from '@cairn/testing';
import { z } from 'zod';

/** A gate a tool waits on, so a test can hold a run mid-tool and let it go. */
export function gate() {
  let open: () => void = () => undefined;
  let entered: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const reached = new Promise<void>((resolve) => (entered = resolve));
  return { open, opened, reached, enter: entered };
}

/**
 * An agent of three trips: `step` twice (the second waits on `hold` when given), then an answer.
 * `effects` counts each tool call's side effect.
 */
export function orderAgent(
  store: DurableStore,
  options: { hold?: ReturnType<typeof gate>; clock?: Clock; name?: string } = {},
) {
  const effects: Record<string, number> = {};
  const step = defineTool({
    name: 'step',
    description: 'Does one step.',
    input: z.object({ n: z.number() }),
    execute: async ({ n }, ctx) => {
      effects[ctx.toolCallId] = (effects[ctx.toolCallId] ?? 0) + 1;
      if (n === 2 && options.hold !== undefined) {
        options.hold.enter();
        // Like a well-behaved tool, it stops waiting when its run is cancelled or its lease is lost.
        await Promise.race([
          options.hold.opened,
          new Promise((_resolve, reject) =>
            ctx.signal.addEventListener('abort', () => reject(new Error('aborted')), {
              once: true,
            }),
          ),
        ]);
      }
      return { done: n };
    },
  });
  const model = scriptedModel([
    { toolCalls: [{ id: 's1', name: 'step', args: { n: 1 } }] },
    { toolCalls: [{ id: 's2', name: 'step', args: { n: 2 } }] },
    { text: 'all steps done' },
  ]);
  const agent = defineAgent({
    name: options.name ?? 'orders',
    model,
    tools: [step],
    maxTrips: 5,
    durable: { store, ...(options.clock === undefined ? {} : { clock: options.clock }) },
  });
  return { agent, effects, model };
}

/** Resolves when `predicate` holds, checking after each event loop turn (bounded by the test timeout). */
export async function until(predicate: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await predicate())) await new Promise((resolve) => setTimeout(resolve, 10));
}

/**
 * An agent whose `refund` call waits for a person's approval, then answers "Refunded."; `refunds` counts the
 * refunds the tool made. It has the `wait_until` tool too, for scripts that sleep.
 */
export function refundAgent(
  store: DurableStore,
  clock: Clock,
  options: {
    name?: string;
    script?: Script;
    recordCalls?: boolean;
    /** Runs before each model call (to send a signal mid-trip). */
    beforeGenerate?: () => Promise<void>;
  } = {},
) {
  const refunds: string[] = [];
  const refund = defineTool({
    name: 'refund',
    description: 'Refunds an order.',
    input: z.object({ order: z.string() }),
    execute: ({ order }, ctx) => {
      refunds.push(`${ctx.runId}:${order}`);
      return { refunded: order };
    },
  });
  const model = scriptedModel(
    options.script ?? [
      { toolCalls: [{ id: 'c-refund', name: 'refund', args: { order: 'o-1' } }] },
      { text: 'Refunded.' },
    ],
    { recordCalls: options.recordCalls ?? true },
  );
  const agent = defineAgent({
    name: options.name ?? 'support',
    model: {
      ...model,
      generate: async (request) => {
        await options.beforeGenerate?.();
        return model.generate(request);
      },
    },
    tools: [refund, waitUntilTool()],
    approval: { tools: { refund: true } },
    maxTrips: 5,
    durable: { store, clock },
  });
  return { agent, model, refunds };
}
