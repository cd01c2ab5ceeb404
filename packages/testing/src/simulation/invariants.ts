import { isDeepStrictEqual } from 'node:util';
import {
  childRunId,
  type AgentState,
  type DurableStore,
  type PlannerState,
  type Usage,
} from '@cairn/sdk';
import type { Ledger } from './ledger.js';
import { endProblem, expectedOutput, isAgentKind } from './run-ends.js';
import { nonIdempotentCalls, rootIdOf, usageOf, type SimKind, type SimWorld } from './sim-world.js';

/** What the schedule did to one root run, as the checks need it. */
export interface RunFate {
  runId: string;
  kind: SimKind;
  /** A holder of it crashed, froze past its lease or lost its lock session: in-flight calls may be unknown. */
  disrupted: boolean;
  /** A client asked to cancel it: it ends cancelled, or as it would have if it ended first. */
  cancelRequested: boolean;
  /** A client discarded it and it was not started again. */
  discarded: boolean;
}

function sum(usages: readonly Usage[]): Usage {
  return usages.reduce(
    (total, usage) => ({
      inputTokens: total.inputTokens + usage.inputTokens,
      outputTokens: total.outputTokens + usage.outputTokens,
      totalTokens: total.totalTokens + usage.totalTokens,
    }),
    { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
  );
}

/** A run's unknown calls with the run id each was made in (a child's are its own). */
interface Unknown {
  runId: string;
  call: string;
  effectId: string;
}

/**
 * The end-of-schedule checks of DESIGN.md's invariants, from outside: the side table says what really
 * happened, the ledger what the stores acknowledged, and the store the final state. Returns the violations.
 */
export async function checkRuns(
  fates: readonly RunFate[],
  store: DurableStore,
  world: SimWorld,
  ledger: Ledger,
  now: number,
): Promise<string[]> {
  const problems: string[] = [];
  // Invariants 2 and 3, over every generation: a call that is not idempotent happened at most once.
  for (const [key, count] of world.sideEffects) {
    const call = key.slice(key.lastIndexOf('/') + 1);
    if (nonIdempotentCalls.has(call) && count > 1) problems.push(`${key} ran ${count} times`);
  }
  for (const fate of fates) {
    const loaded = await store.load(fate.runId);
    if (fate.discarded) {
      if (loaded !== undefined) problems.push(`${fate.runId} was discarded but is still stored`);
      continue;
    }
    if (loaded === undefined) {
      problems.push(`${fate.runId} was lost: it is not stored (invariant 4)`);
      continue;
    }
    const { run } = loaded;
    const ended = endProblem(fate, loaded, now);
    if (ended !== undefined) {
      problems.push(ended);
      continue;
    }
    if (run.status !== 'completed') continue;
    const state = (run.snapshot as unknown as { state: AgentState | PlannerState }).state;
    const unknown = isAgentKind(fate.kind)
      ? agentUnknowns(fate.runId, state as AgentState)
      : plannerUnknowns(fate.runId, state as PlannerState);
    for (const call of unknown) {
      if (!fate.disrupted) {
        problems.push(
          `${call.runId} reported ${call.call} unknown, with no crash, freeze or lost session`,
        );
      }
      const acknowledged = `${call.runId}@${await incarnationOf(store, call.runId)}/${call.effectId}`;
      if (ledger.acknowledged.has(acknowledged)) {
        problems.push(
          `${call.runId} reported ${call.call} unknown although its result was acknowledged`,
        );
      }
    }
    checkModelCalls(fate, world, problems);
    checkUsage(fate, state, problems);
    if (unknown.length === 0) {
      const expected = expectedOutput(fate.kind, state);
      if (!isDeepStrictEqual(run.output, expected)) {
        problems.push(`${fate.runId} returned ${JSON.stringify(run.output)} (invariant 9)`);
      }
    }
  }
  return problems;
}

async function incarnationOf(store: DurableStore, runId: string): Promise<string> {
  return (await store.load(runId))?.run.incarnation ?? '?';
}

function agentUnknowns(runId: string, state: AgentState): Unknown[] {
  return state.messages.flatMap((message) => {
    if (message.role !== 'tool' || message.outcome !== 'unknown') return [];
    const trip =
      state.messages.slice(0, state.messages.indexOf(message)).filter((m) => m.role === 'assistant')
        .length - 1;
    return [
      { runId, call: message.toolCallId, effectId: `trip-${trip}/tool/${message.toolCallId}` },
    ];
  });
}

function plannerUnknowns(runId: string, state: PlannerState): Unknown[] {
  return state.ledger.flatMap((entry) => [
    ...(entry.status === 'unknown'
      ? [{ runId, call: entry.id, effectId: `node/${entry.id}` }]
      : []),
    ...(entry.child?.unknownToolCalls ?? []).map((call) => ({
      runId: entry.child?.runId ?? childRunId(runId, entry.id),
      call,
      // The concierge calls its tools in its first trip.
      effectId: `trip-0/tool/${call}`,
    })),
  ]);
}

/** Invariant 2, for models: an answer is asked for again only after its run lost its holder. */
function checkModelCalls(fate: RunFate, world: SimWorld, problems: string[]): void {
  if (fate.disrupted) return;
  const generation = `@${world.generation(fate.runId)}/`;
  for (const [key, count] of world.modelCalls) {
    const runId = key.slice(0, key.indexOf('@'));
    if (rootIdOf(runId) !== fate.runId || !key.includes(generation)) continue;
    if (count > 1) problems.push(`${key}: the model was asked ${count} times without a crash`);
  }
}

/** Usage is counted once per model answer the run used: its own and its children's. */
function checkUsage(fate: RunFate, state: AgentState | PlannerState, problems: string[]): void {
  let expected: Usage;
  if (isAgentKind(fate.kind)) {
    const agent = state as AgentState;
    expected = sum(Array.from({ length: agent.trips }, (_, turn) => usageOf(fate.kind, turn)));
  } else {
    const planner = state as PlannerState;
    const turns = planner.conversation.filter((m) => m.role === 'assistant').length;
    const children = planner.ledger.flatMap((entry) =>
      entry.child === undefined
        ? []
        : Array.from({ length: entry.child.trips }, (_, turn) => usageOf('concierge', turn)),
    );
    expected = sum([
      ...Array.from({ length: turns }, (_, turn) => usageOf(fate.kind, turn)),
      ...children,
    ]);
  }
  const counted = (state as { usage: Usage }).usage;
  if (!isDeepStrictEqual(counted, expected)) {
    problems.push(
      `${fate.runId} counted usage ${JSON.stringify(counted)}, expected ${JSON.stringify(expected)}`,
    );
  }
}
