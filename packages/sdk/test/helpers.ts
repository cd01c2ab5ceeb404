import { defineTool, type DurableStore } from '@cairn/sdk';
import { z } from 'zod';

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
  return {
    ...store,
    create: (run) => store.create(run),
    load: (runId) => store.load(runId),
    list: (filter) => store.list(filter),
    delete: (runId) => store.delete(runId),
    acquire: (runId, options) => store.acquire(runId, options),
    renew: (lease, ttl) => store.renew(lease, ttl),
    release: (lease) => store.release(lease),
    adopt: (child, parent) => store.adopt(child, parent),
    save: async (runId, epoch, checkpoint) => {
      if (failing('save')) throw makeError();
      return store.save(runId, epoch, checkpoint);
    },
    append: async (runId, epoch, entries) => {
      if (failing('append')) throw makeError();
      return store.append(runId, epoch, entries);
    },
    updateStatus: async (runId, epoch, update) => {
      if (failing('updateStatus')) throw makeError();
      return store.updateStatus(runId, epoch, update);
    },
  };
}
