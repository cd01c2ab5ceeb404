import { isWaitDue, type AgentState, type PlannerState, type StoredRun } from '@cairn/sdk';
import type { SimKind } from './sim-world.js';

/** The kinds whose runs are agents (the others are planners). */
export function isAgentKind(kind: SimKind): kind is 'booker' | 'clerk' {
  return kind === 'booker' || kind === 'clerk';
}

/** The kinds whose runs hold calls for a person's decision, and may wait. */
export function holdsForApproval(kind: SimKind): kind is 'clerk' | 'itinerary' {
  return kind === 'clerk' || kind === 'itinerary';
}

/**
 * Why a run's state after the drain breaks invariant 10 or 15, or undefined: every run ends (completed; or
 * cancelled when a client asked; an itinerary failed for a decision that came too late, which the decision
 * checks judge) or waits, holding nothing, for what has not come (a decision nobody sent, a time not reached).
 */
export function endProblem(
  fate: { runId: string; kind: SimKind; cancelRequested: boolean },
  loaded: StoredRun,
  now: number,
): string | undefined {
  const { run } = loaded;
  const error = run.error === undefined ? '' : ` (${run.error.code}: ${run.error.message})`;
  if (run.status === 'waiting' && holdsForApproval(fate.kind)) {
    if (run.owner !== null) {
      return `${fate.runId} waits but ${run.owner} still holds it (invariant 15)`;
    }
    const due =
      run.cancelRequested ||
      (run.wait !== null && isWaitDue(run.wait, loaded.signals, now)) ||
      run.wait === null;
    if (due) {
      const mail = loaded.signals.map((signal) => `${signal.seq}:${signal.name}`).join(', ');
      return (
        `${fate.runId} was left waiting although its wait is due: wait ${JSON.stringify(run.wait)}, ` +
        `unconsumed [${mail}], cancel asked ${run.cancelRequested} (invariant 10)`
      );
    }
    return undefined;
  }
  if (run.status === 'cancelled' && fate.cancelRequested) return undefined;
  if (run.status === 'completed') return undefined;
  if (
    run.status === 'failed' &&
    fate.kind === 'itinerary' &&
    run.error?.code === 'APPROVAL_TIMEOUT'
  )
    return undefined;
  const expected = [
    'completed',
    ...(fate.cancelRequested ? ['cancelled'] : []),
    ...(holdsForApproval(fate.kind) ? ['waiting for what has not come'] : []),
  ];
  return `${fate.runId} ended ${run.status}${error}, expected ${expected.join(' or ')} (invariant 10)`;
}

/** What a completed run of `kind` returns when nothing it did was reported unknown (invariant 9). */
export function expectedOutput(kind: SimKind, state: AgentState | PlannerState): unknown {
  if (kind === 'booker') return 'booked';
  if (kind === 'clerk') return 'refunded';
  if (kind === 'trip') return { notify: { found: 'notified' } };
  // The itinerary's first plan ends with `done`; a replan (after a rejected payment) only checks.
  const plan = (state as PlannerState).plan;
  if (plan === null || plan.revision === 0) return { done: { found: 'confirmed' } };
  return Object.fromEntries(plan.nodes.map((node) => [node.id, { found: 'v' }]));
}
