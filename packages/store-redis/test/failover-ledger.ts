import { defineAgent, defineTool, type Boundary, type DurableStore } from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import type { WorkerEvent } from '@cairn/worker';
import { z } from 'zod';

/** Usage the scripted model reports for each call: a run of `trips` trips must end with `trips` times it. */
export const usagePerCall = { inputTokens: 10, outputTokens: 2, totalTokens: 12 };

/** What happened to the runs, as the model, the tool, the workers and the runtime saw it. */
export interface FailoverLedger {
  /** Model calls per `runId:turn`. */
  modelCalls: Map<string, number>;
  /** Executions of the non-idempotent tool per `runId:toolCallId`. */
  toolExecutions: Map<string, number>;
  /** Every worker event, with the wall time it arrived (ms since the epoch). */
  events: Array<{ at: number; worker: string; event: WorkerEvent }>;
  /** Wall times of each run's checkpoints (`checkpoint.after`), with the status written. */
  checkpoints: Map<string, Array<{ at: number; status: string }>>;
  /** Every checkpoint so far, all runs together. */
  checkpointCount(): number;
  /** The worker's `onEvent` for the worker named `worker`. */
  onEvent(worker: string): (event: WorkerEvent) => void;
  /** The worker's `onBoundary`. */
  onBoundary(boundary: Boundary): void;
}

export function createFailoverLedger(): FailoverLedger {
  const ledger: FailoverLedger = {
    modelCalls: new Map(),
    toolExecutions: new Map(),
    events: [],
    checkpoints: new Map(),
    checkpointCount: () =>
      [...ledger.checkpoints.values()].reduce((sum, list) => sum + list.length, 0),
    onEvent: (worker) => (event) => ledger.events.push({ at: Date.now(), worker, event }),
    onBoundary(boundary) {
      if (boundary.point !== 'checkpoint.after') return;
      const list = ledger.checkpoints.get(boundary.runId) ?? [];
      list.push({ at: Date.now(), status: boundary.status ?? '' });
      ledger.checkpoints.set(boundary.runId, list);
    },
  };
  return ledger;
}

const bump = (counts: Map<string, number>, key: string) =>
  counts.set(key, (counts.get(key) ?? 0) + 1);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * An agent of `trips` trips: each but the last asks for one call of a non-idempotent tool, the last answers
 * `done`. The model takes `modelMs` and the tool `toolMs` of wall time. The run's input is its id: the model reads it from the prompt to count calls per run and turn.
 */
export function failoverAgent(
  store: DurableStore,
  ledger: FailoverLedger,
  options: {
    trips: number;
    modelMs: number;
    toolMs: number;
    /** The model call of this turn waits for `until` first: every run is mid-way when the test acts. */
    hold?: { turn: number; until: Promise<void> };
  },
) {
  const record = defineTool({
    name: 'record',
    description: 'Records a trip somewhere that cannot tell a repeat.',
    input: z.object({ trip: z.number() }),
    execute: async ({ trip }, ctx) => {
      bump(ledger.toolExecutions, `${ctx.runId}:${ctx.toolCallId}`);
      await pause(options.toolMs);
      return { recorded: trip };
    },
  });
  const script = scriptedModel(
    (_request, turn) =>
      turn < options.trips - 1
        ? {
            toolCalls: [{ id: `trip-${turn}`, name: 'record', args: { trip: turn } }],
            usage: usagePerCall,
          }
        : { text: 'done', usage: usagePerCall },
    { recordCalls: false },
  );
  const model = {
    ...script,
    async generate(request: Parameters<typeof script.generate>[0]) {
      const prompt = request.messages.find((message) => message.role === 'user');
      const turn = request.messages.filter((message) => message.role === 'assistant').length;
      bump(ledger.modelCalls, `${String(prompt?.content)}:${turn}`);
      if (options.hold !== undefined && turn === options.hold.turn) await options.hold.until;
      await pause(options.modelMs);
      return script.generate(request);
    },
  };
  return defineAgent({
    name: 'failover',
    model,
    tools: [record],
    maxTrips: options.trips,
    durable: { store },
  });
}

/** The usage a run's stored snapshot records (the agent state's `usage`, wherever the snapshot nests it). */
export function usageInSnapshot(snapshot: unknown): unknown {
  if (snapshot === null || typeof snapshot !== 'object') return undefined;
  const object = snapshot as Record<string, unknown>;
  if ('usage' in object && 'messages' in object) return object.usage;
  for (const value of Object.values(object)) {
    const found = usageInSnapshot(value);
    if (found !== undefined) return found;
  }
  return undefined;
}
