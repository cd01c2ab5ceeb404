import { defineTool, type DurableStore, type RetryPolicy } from '@cairn/sdk';
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

/** One gate per key, made on first use. */
function gatesByKey(): (key: string) => Gate {
  const gates = new Map<string, Gate>();
  return (key) => {
    let g = gates.get(key);
    if (g === undefined) gates.set(key, (g = gate()));
    return g;
  };
}

/** A tool whose calls each wait for their own gate; counts the runs of each call id. */
export function gatedTool(name: string, idempotent = false) {
  const ran: Record<string, number> = {};
  const gateOf = gatesByKey();
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

/**
 * A tool that ignores its signal: each try waits for its gate (`gateOf(toolCallId, try)`), unless it is try
 * `answerFrom` or later, which answers at once. Counts the tries of each call id and keeps their signals.
 */
export function stallingTool(
  name: string,
  options: {
    idempotent?: boolean;
    timeoutMs?: number;
    retry?: RetryPolicy;
    answerFrom?: number;
  } = {},
) {
  const tries: Record<string, number> = {};
  const signals: Record<string, AbortSignal[]> = {};
  const gateAt = gatesByKey();
  const gateOf = (id: string, try_ = 1) => gateAt(`${id}#${try_}`);
  const tool = defineTool({
    name,
    description: `The ${name} tool.`,
    input: z.object({ value: z.string() }),
    idempotent: options.idempotent ?? false,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.retry === undefined ? {} : { retry: options.retry }),
    execute: async ({ value }, ctx) => {
      const try_ = (tries[ctx.toolCallId] = (tries[ctx.toolCallId] ?? 0) + 1);
      (signals[ctx.toolCallId] ??= []).push(ctx.signal);
      if (try_ >= (options.answerFrom ?? Infinity)) return { [name]: value };
      await gateOf(ctx.toolCallId, try_).promise;
      return { [name]: value, late: true };
    },
  });
  return { tool, tries, signals, gateOf };
}

/** How a promise stands once pending callbacks have run: its value, its error, or still pending. */
export async function standing<T>(
  promise: Promise<T>,
): Promise<{ value: T } | { error: unknown } | 'pending'> {
  const settled = promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  return Promise.race([settled, ticks(20).then(() => 'pending' as const)]);
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
    async (...args: Parameters<Writes[K]>): Promise<Awaited<ReturnType<Writes[K]>>> => {
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
