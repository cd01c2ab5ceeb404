import { randomBytes } from 'node:crypto';
import { defineAgent, defineTool, type DurableStore } from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { z } from 'zod';

/** Options of `benchAgent`. */
export interface BenchAgentOptions {
  name: string;
  /** Trips that call the tool; one more model call then gives the final answer. */
  trips: number;
  /** Set to run the agent with `execute` on this store; workers ignore it. */
  store?: DurableStore;
  /**
   * Characters of the random base64 string each tool call returns (the conversation grows by it every trip;
   * random so that Postgres's TOAST compression cannot shrink it). @defaultValue 2
   */
  resultBytes?: number;
  /** The tool waits this long on a timer, or until its run stops. @defaultValue 0 (returns at once) */
  toolWaitMs?: number;
  /** Only the first trip's tool call waits. @defaultValue false */
  waitFirstOnly?: boolean;
  /** The first trip's tool call also waits until this settles (or its run stops). */
  holdFirst?: Promise<void>;
  /** Called as each tool call starts, to count how many times a call ran. */
  onToolRun?(runId: string, toolCallId: string): void;
  /** Tokens of text each model answer says (about 5 characters each), streamed a token at a time. @defaultValue 0 */
  textTokens?: number;
}

/** The text of a bench answer of `tokens` tokens. */
export const benchText = (tokens: number) => 'word '.repeat(tokens);

/**
 * An agent whose scripted model answers at once: `trips` trips of one call to a tool (no-op, or waiting on a
 * timer), then a final answer. The tool is not idempotent (the default), so each call is journaled as started
 * before it runs and as settled after.
 */
export function benchAgent(options: BenchAgentOptions) {
  const length = options.resultBytes ?? 2;
  const wait = options.toolWaitMs ?? 0;
  const tool = defineTool({
    name: 'work',
    description: 'Does nothing, or waits.',
    input: z.object({ trip: z.number() }),
    execute: async ({ trip }, context) => {
      options.onToolRun?.(context.runId, context.toolCallId);
      if (wait > 0 && (trip === 0 || options.waitFirstOnly !== true)) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait);
          context.signal.addEventListener(
            'abort',
            () => {
              clearTimeout(timer);
              resolve();
            },
            { once: true },
          );
        });
      }
      if (trip === 0 && options.holdFirst !== undefined) {
        const stopped = new Promise<void>((resolve) =>
          context.signal.addEventListener('abort', () => resolve(), { once: true }),
        );
        await Promise.race([options.holdFirst, stopped]);
      }
      return randomBytes(Math.ceil((length * 3) / 4))
        .toString('base64')
        .slice(0, length);
    },
  });
  // The bench measures Cairn, not the fake model: it keeps no copy of each request.
  const text = benchText(options.textTokens ?? 0);
  const model = scriptedModel(
    (_request, turn) =>
      turn < options.trips
        ? { text, toolCalls: [{ id: `c${turn}`, name: 'work', args: { trip: turn } }] }
        : { text: `${text}done` },
    { recordCalls: false, ...(options.textTokens === undefined ? {} : { streamPieces: 5 }) },
  );
  return defineAgent({
    name: options.name,
    model,
    tools: [tool],
    maxTrips: options.trips + 1,
    ...(options.store === undefined ? {} : { durable: { store: options.store } }),
  });
}
