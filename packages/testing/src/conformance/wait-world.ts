import {
  CairnError,
  defineAgent,
  definePlanner,
  defineTool,
  pendingApprovals,
  RunWaitingError,
  type Capability,
  type DurableStore,
  type ModelMessage,
  type StoreRetryPolicy,
} from '@cairn/sdk';
import { expect } from 'vitest';
import { z } from 'zod';
import { createFakeClock } from '../fake-clock.js';
import { scriptedModel, type ScriptedTurn } from '../scripted-model.js';

/** Store retries short enough for a test to see a run suspended. */
export const quickRetry: StoreRetryPolicy = {
  maxAttempts: 3,
  initialDelayMs: 10,
  maxDelayMs: 10,
  maxElapsedMs: 100,
};

/** A retryable store error, as a store that cannot be reached throws. */
export const outage = () =>
  new CairnError('STORE_UNAVAILABLE', 'connection refused', { retryable: true });

/** `store` with its checkpoints failing (with `error()`) while `failing()` says so. */
export function failingSaves(
  store: DurableStore,
  failing: () => boolean,
  error: () => Error = outage,
): DurableStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'save') {
        return (...args: Parameters<DurableStore['save']>) => {
          if (failing()) return Promise.reject(error());
          return target.save(...args);
        };
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** A `refund` tool that records the orders it refunded. */
export function refundTool() {
  const refunds: string[] = [];
  const tool = defineTool({
    name: 'refund',
    description: 'Refunds an order.',
    input: z.object({ order: z.string() }),
    execute: ({ order }) => {
      refunds.push(order);
      return { refunded: order };
    },
  });
  return { tool, refunds };
}

/** Two refunds asked in one trip, then an answer: the script of `refundAgent` unless another is given. */
const twoRefunds: ScriptedTurn[] = [
  {
    toolCalls: [
      { id: 'c-1', name: 'refund', args: { order: 'o-1' } },
      { id: 'c-2', name: 'refund', args: { order: 'o-2' } },
    ],
  },
  { text: 'Done.' },
];

/** An agent whose every refund is held for approval (with the policy's `timeoutMs`/`onTimeout` if given). */
export function refundAgent(
  store: DurableStore,
  options: {
    script?: ScriptedTurn[];
    timeoutMs?: number;
    onTimeout?: 'reject' | 'fail';
    storeRetry?: StoreRetryPolicy;
    /** @defaultValue 10000 */
    leaseMs?: number;
  } = {},
) {
  const clock = createFakeClock({ autoAdvance: true });
  const { tool, refunds } = refundTool();
  const model = scriptedModel(options.script ?? twoRefunds);
  const agent = defineAgent({
    name: 'support',
    model,
    tools: [tool],
    approval: {
      tools: { refund: true },
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      ...(options.onTimeout === undefined ? {} : { onTimeout: options.onTimeout }),
    },
    durable: {
      store,
      clock,
      leaseMs: options.leaseMs ?? 10_000,
      ...(options.storeRetry === undefined ? {} : { storeRetry: options.storeRetry }),
    },
  });
  return { agent, model, refunds, clock };
}

/** A planner whose `pay` node is held for approval; after a rejection it replans to a `note` node. */
export function payingPlanner(
  store: DurableStore,
  options: { timeoutMs?: number; storeRetry?: StoreRetryPolicy } = {},
) {
  const clock = createFakeClock({ autoAdvance: true });
  const paid: number[] = [];
  const pay = defineTool({
    name: 'pay',
    description: 'Pays.',
    input: z.object({ cents: z.number().int() }),
    execute: ({ cents }) => {
      paid.push(cents);
      return { paid: cents };
    },
  });
  const note = defineTool({
    name: 'note',
    description: 'Notes.',
    input: z.object({ text: z.string() }),
    execute: ({ text }) => ({ noted: text }),
  });
  const capabilities: Capability[] = [
    { name: 'pay', description: 'Pay.', executable: pay },
    { name: 'note', description: 'Note.', executable: note },
  ];
  const plan = (id: string, capability: string, input: object) => ({
    text: JSON.stringify({ nodes: [{ id, capability, input, dependsOn: [] }] }),
  });
  const planner = definePlanner({
    name: 'trip',
    model: scriptedModel([
      plan('hotel', 'pay', { cents: 45_000 }),
      plan('hostel', 'note', { text: 'book a hostel' }),
    ]),
    capabilities,
    approval: {
      capabilities: { pay: true },
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    },
    durable: {
      store,
      clock,
      leaseMs: 10_000,
      ...(options.storeRetry === undefined ? {} : { storeRetry: options.storeRetry }),
    },
  });
  return { planner, paid, clock };
}

/** Runs `execute` and expects it to end waiting. */
export async function startWaiting(
  definition: { execute(input: string, options: { runId: string }): Promise<unknown> },
  runId: string,
): Promise<void> {
  const error = await definition.execute('Go', { runId }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(RunWaitingError);
}

/** The hash a run waits for `callId` with. */
export async function hashOf(store: DurableStore, runId: string, callId: string): Promise<string> {
  const pending = pendingApprovals((await store.load(runId))!.run.wait?.detail);
  const call = pending.find((held) => held.callId === callId);
  if (call === undefined) throw new Error(`run "${runId}" does not wait for "${callId}"`);
  return call.argsHash;
}

/** The tool message answering `callId`. */
export function answerTo(
  messages: readonly ModelMessage[],
  callId: string,
): ModelMessage | undefined {
  return messages.find((m) => m.role === 'tool' && m.toolCallId === callId);
}

/** Whether `error` is a CairnError with `code`. */
export function hasCode(code: string): (error: unknown) => boolean {
  return (error) => error instanceof CairnError && error.code === code;
}
