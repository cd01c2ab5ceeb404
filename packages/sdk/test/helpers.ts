import { defineTool, type DurableStore } from '@cairn/sdk';
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
