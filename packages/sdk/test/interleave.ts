import { defineTool, type DurableStore } from '@cairn/sdk';
import { z } from 'zod';

/** A promise with its resolve handle, for holding an effect or a write until a test lets it go. */
export interface Gate<T = void> {
  promise: Promise<T>;
  open(value: T): void;
  opened: boolean;
}

export function gate<T = void>(): Gate<T> {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  const g: Gate<T> = {
    promise,
    opened: false,
    open(value: T) {
      g.opened = true;
      open(value);
    },
  };
  return g;
}

/** A tool whose calls each wait for their own gate; counts the runs of each call id. */
export function gatedTool(name: string, idempotent = false) {
  const gates = new Map<string, Gate>();
  const ran: Record<string, number> = {};
  const gateOf = (id: string) => {
    let g = gates.get(id);
    if (g === undefined) gates.set(id, (g = gate()));
    return g;
  };
  const tool = defineTool({
    name,
    description: `The ${name} tool.`,
    input: z.object({ value: z.string() }),
    idempotent,
    execute: async ({ value }, ctx) => {
      await gateOf(ctx.toolCallId).promise;
      ran[ctx.toolCallId] = (ran[ctx.toolCallId] ?? 0) + 1;
      return { [name]: value };
    },
  });
  return { tool, ran, gateOf };
}

/** The tool call ids an agent's conversation answered as outcome unknown. */
export function unknownCalls(
  messages: ReadonlyArray<{ role: string; outcome?: string; toolCallId?: string }>,
): Array<string | undefined> {
  return messages
    .filter((m) => m.role === 'tool' && m.outcome === 'unknown')
    .map((m) => m.toolCallId);
}

/** Lets pending callbacks and promise chains run. */
export function ticks(n = 5): Promise<void> {
  let p = Promise.resolve();
  for (let i = 0; i < n; i += 1) p = p.then(() => new Promise<void>((r) => setImmediate(r)));
  return p;
}

type Writes = Pick<DurableStore, 'save' | 'append' | 'updateStatus'>;

/**
 * A store whose writes first pass `before(kind, args)`: a test may hold a write there (its arguments
 * already copied, as a store that serializes at call time would) to interleave it with the run.
 */
export function interceptWrites(
  store: DurableStore,
  before: (kind: keyof Writes, args: unknown[]) => Promise<void> | void,
): DurableStore {
  const wrap =
    <K extends keyof Writes>(kind: K) =>
    async (...args: Parameters<Writes[K]>): Promise<void> => {
      const copied = structuredClone(args);
      await before(kind, copied);
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      return (store[kind] as any)(...copied);
    };
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
    claimable: (options) => store.claimable(options),
    requestCancel: (runId) => store.requestCancel(runId),
    prune: (options) => store.prune(options),
    save: wrap('save'),
    append: wrap('append'),
    updateStatus: wrap('updateStatus'),
  };
}
