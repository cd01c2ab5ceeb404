import { defineTool, type DurableStore, type ExecuteOptions } from '@cairn/sdk';
import { SimulatedCrash } from '@cairn/testing';
import { expect } from 'vitest';
import { z } from 'zod';
import { interceptWrites } from './interleave.js';

/** A tool that counts its calls per tool call id, so tests can see what ran and how often. */
export function countingTool(name: string, options: { idempotent?: boolean } = {}) {
  const calls: Record<string, number> = {};
  const tool = defineTool({
    name,
    description: `The ${name} tool.`,
    input: z.object({ value: z.string() }),
    ...(options.idempotent === undefined ? {} : { idempotent: options.idempotent }),
    execute: async ({ value }, ctx) => {
      calls[ctx.toolCallId] = (calls[ctx.toolCallId] ?? 0) + 1;
      return { [name]: value };
    },
  });
  return { tool, calls };
}

/** A store whose chosen writes fail with a retryable error while `failing()` says so. */
export function flakyStore(
  store: DurableStore,
  failing: (operation: 'save' | 'append' | 'updateStatus') => boolean,
  makeError: () => Error,
): DurableStore {
  return interceptWrites(store, (kind) => {
    if (failing(kind)) throw makeError();
  });
}

/**
 * Executes a run and crashes it at its first running checkpoint once `ready()` holds (say, once its tools ran,
 * before the checkpoint that would record them); the crash is expected.
 */
export async function crashAtCheckpointOnce(
  agent: { execute(input: string, options?: ExecuteOptions): Promise<unknown> },
  runId: string,
  ready: () => boolean,
): Promise<void> {
  await expect(
    agent.execute('go', {
      runId,
      onBoundary: (b) => {
        if (b.point === 'checkpoint.before' && b.status === 'running' && ready())
          throw new SimulatedCrash(b);
      },
    }),
  ).rejects.toBeInstanceOf(SimulatedCrash);
}
