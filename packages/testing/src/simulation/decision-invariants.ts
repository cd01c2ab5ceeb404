import {
  agentSignals,
  parseApprovalDecision,
  toolArgsHash,
  type AgentState,
  type DurableStore,
  type PlannerState,
  type RunRecord,
} from '@cairn/sdk';
import { holdableCalls, type HoldableCall } from './approval-world.js';
import type { AcceptedSignal, MailboxLedger } from './mailbox-ledger.js';
import { holdsForApproval } from './run-ends.js';
import type { SimKind, SimWorld } from './sim-world.js';

/** What the run's last stored state says of a held call. */
type Answer =
  { kind: 'ok' | 'unknown' | 'error' | 'approved' | 'none' } | { kind: 'rejected'; text: string };

/** The signal that decided a held call first, in mailbox order, as the clients saw the run when they sent it. */
interface FirstDecision {
  signal: AcceptedSignal;
  verdict: 'approve' | 'reject' | 'steer';
  deadline: number | null;
}

/**
 * The checks of held calls and the signals that decide them (DESIGN.md invariant 15, issue #30), from outside:
 * what the stores accepted (the mailbox ledger, with what each client saw before sending), what the tools did
 * (the world's side table, with the arguments each call ran with) and the runs' final states. A held call runs
 * at most once, only with arguments an accepted approval named; its first decision in mailbox order counts (a
 * later steer or rejection never undoes an approval, a later approval never undoes a rejection); a call
 * answered as not approved never ran.
 */
export async function checkDecisions(
  fates: ReadonlyArray<{ runId: string; kind: SimKind; discarded: boolean; disrupted: boolean }>,
  store: DurableStore,
  world: SimWorld,
  mailboxes: MailboxLedger,
): Promise<string[]> {
  const problems: string[] = [];
  for (const fate of fates) {
    if (!holdsForApproval(fate.kind)) continue;
    const current = world.generation(fate.runId);
    for (let generation = 0; generation <= current; generation += 1) {
      checkExecutions(fate.runId, fate.kind, generation, world, mailboxes, problems);
    }
    if (fate.discarded) continue;
    const run = (await store.load(fate.runId))?.run;
    if (run === undefined) continue;
    const signals = mailboxes.of(fate.runId, current);
    for (const call of holdableCalls(fate.kind, fate.runId)) {
      const ran = world.executions.get(`${fate.runId}@${current}/${call.callId}`) ?? [];
      const answer = answerOf(fate.kind, run, call.callId);
      const where = `${fate.runId}@${current}/${call.callId}`;
      if (answer.kind === 'rejected' && ran.length > 0) {
        problems.push(`${where} ran although the run answers it as not approved (${answer.text})`);
      }
      if (answer.kind === 'ok' && ran.length !== 1) {
        problems.push(`${where} is answered as run, but it ran ${ran.length} times`);
      }
      const first = firstDecisions(fate.kind, call, signals);
      if (first.length > 1) {
        problems.push(
          `${where} was still listed undecided after ${describe(first[0]!.signal)}, which decided it, ` +
            `was consumed (then ${describe(first[1]!.signal)})`,
        );
      }
      const decided = first[0];
      if (decided !== undefined) {
        const context = `${where}: ${describe(decided.signal)} came first; mailbox ${signals.map(describe).join(', ')}`;
        checkFirstDecision(fate, run, call.callId, decided, { answer, ran, context }, problems);
      }
    }
  }
  return problems;
}

/** An approved or rejected call ends as its first decision said (a decision after its deadline may lose). */
function checkFirstDecision(
  fate: { kind: SimKind; disrupted: boolean },
  run: RunRecord,
  callId: string,
  first: FirstDecision,
  seen: { answer: Answer; ran: readonly string[]; context: string },
  problems: string[],
): void {
  const { answer, ran, context } = seen;
  const inTime = first.deadline === null || first.signal.at < first.deadline;
  const timedOut = run.status === 'failed' && run.error?.code === 'APPROVAL_TIMEOUT';
  const timedOutCall = (run.error?.data as { callId?: string } | undefined)?.callId;
  if (inTime && timedOut && timedOutCall === callId) {
    problems.push(`${context}; yet the run failed with APPROVAL_TIMEOUT on it`);
  }
  const replanned = abandonedByReplan(fate.kind, run, callId);
  if (first.verdict === 'approve') {
    if (!inTime) return;
    if (answer.kind === 'rejected') {
      problems.push(`${context}; yet the call was answered as not approved: ${answer.text}`);
      return;
    }
    if (run.status !== 'completed' || replanned) return;
    if (answer.kind !== 'ok' && !(answer.kind === 'unknown' && fate.disrupted)) {
      problems.push(
        `${context}; the run completed, but the approved call is answered ${answer.kind}`,
      );
    }
    return;
  }
  if (ran.length > 0) problems.push(`${context}; yet the call ran with ${ran.join(', ')}`);
  const reason = first.verdict === 'steer' ? 'new instructions' : reasonOf(first.signal);
  if (inTime && answer.kind === 'rejected' && !answer.text.includes(reason)) {
    problems.push(`${context}; yet its rejection says another reason: ${answer.text}`);
  }
  if (run.status === 'completed' && !replanned && answer.kind !== 'rejected') {
    problems.push(`${context}; the run completed with the call answered ${answer.kind}`);
  }
}

/**
 * The signals that each decided the call first, as the client that sent it saw the run: the stored wait listed
 * the call undecided, and no signal before it in the mailbox and not consumed then decided it. A run applies
 * what it consumed, so there is at most one: a second means a decision was consumed and not applied.
 */
function firstDecisions(
  kind: SimKind,
  call: HoldableCall,
  signals: readonly AcceptedSignal[],
): FirstDecision[] {
  const found: FirstDecision[] = [];
  for (const signal of signals) {
    const listed = signal.observed.pending.find((pending) => pending.callId === call.callId);
    if (listed === undefined) continue;
    const verdict = verdictOf(kind, call.callId, listed.argsHash, signal);
    if (verdict === undefined) continue;
    const before = signals.filter(
      (other) =>
        other.seq < signal.seq &&
        (signal.observed.unconsumed.has(other.seq) || other.seq > signal.observed.known),
    );
    if (before.some((other) => verdictOf(kind, call.callId, listed.argsHash, other) !== undefined))
      continue;
    found.push({ signal, verdict, deadline: listed.deadline });
  }
  return found;
}

/** What a signal decides of a held call with these arguments, if anything. */
function verdictOf(
  kind: SimKind,
  callId: string,
  argsHash: string,
  signal: AcceptedSignal,
): FirstDecision['verdict'] | undefined {
  // A steer answers an agent's undecided calls as not approved; a planner reads no messages.
  if (signal.name === agentSignals.steer) return kind === 'clerk' ? 'steer' : undefined;
  if (signal.name !== agentSignals.approval) return undefined;
  const decision = parseApprovalDecision(signal.payload);
  if (decision?.callId !== callId) return undefined;
  if (!decision.approved) return 'reject';
  return decision.argsHash === argsHash ? 'approve' : undefined;
}

/** A held call ran only with arguments an approval the store accepted named (by their hash). */
function checkExecutions(
  runId: string,
  kind: SimKind,
  generation: number,
  world: SimWorld,
  mailboxes: MailboxLedger,
  problems: string[],
): void {
  const signals = mailboxes.of(runId, generation);
  for (const call of holdableCalls(kind, runId)) {
    const ran = world.executions.get(`${runId}@${generation}/${call.callId}`) ?? [];
    if (ran.length > 1)
      problems.push(`${runId}@${generation}/${call.callId} ran ${ran.length} times`);
    const approved = new Set(
      signals.flatMap((signal) => {
        const decision =
          signal.name === agentSignals.approval ? parseApprovalDecision(signal.payload) : undefined;
        return decision?.callId === call.callId && decision.approved && decision.argsHash
          ? [decision.argsHash]
          : [];
      }),
    );
    for (const value of ran) {
      if (!approved.has(toolArgsHash({ value }))) {
        problems.push(
          `${runId}@${generation}/${call.callId} ran with ${JSON.stringify(value)}, which no accepted ` +
            `approval named (${signals.map(describe).join(', ') || 'no signals'})`,
        );
      }
    }
  }
}

/** What the run's last stored state says of the call. */
function answerOf(kind: SimKind, run: RunRecord, callId: string): Answer {
  const state = (run.snapshot as { state?: unknown } | null)?.state;
  if (state === undefined) return { kind: 'none' };
  if (kind === 'clerk') {
    const agent = state as AgentState;
    const message = agent.messages.find((m) => m.role === 'tool' && m.toolCallId === callId);
    if (message?.role === 'tool') {
      const content = message.content as { error?: string; message?: string } | null;
      if (content?.error === 'TOOL_REJECTED')
        return { kind: 'rejected', text: content.message ?? '' };
      return { kind: message.outcome ?? 'ok' };
    }
    const held = agent.held?.approvals.find((c) => c.callId === callId)?.decision;
    return decisionAnswer(held);
  }
  const planner = state as PlannerState;
  const entry = planner.ledger.find((e) => e.id === callId);
  if (entry !== undefined) {
    if (entry.status === 'failed' && entry.error?.code === 'TOOL_REJECTED')
      return { kind: 'rejected', text: entry.error.message };
    return {
      kind: entry.status === 'completed' ? 'ok' : entry.status === 'failed' ? 'error' : 'unknown',
    };
  }
  return decisionAnswer(planner.awaiting?.find((c) => c.callId === callId)?.decision);
}

function decisionAnswer(decision: { approved: boolean; reason?: string } | undefined): Answer {
  if (decision === undefined) return { kind: 'none' };
  return decision.approved
    ? { kind: 'approved' }
    : { kind: 'rejected', text: decision.reason ?? '(no reason)' };
}

/** An itinerary whose first plan failed elsewhere replans, and its held nodes go with the plan. */
function abandonedByReplan(kind: SimKind, run: RunRecord, callId: string): boolean {
  if (kind !== 'itinerary') return false;
  const state = (run.snapshot as { state?: PlannerState } | null)?.state;
  return (state?.ledger ?? []).some((e) => e.id !== callId && e.status !== 'completed');
}

function reasonOf(signal: AcceptedSignal): string {
  return parseApprovalDecision(signal.payload)?.reason ?? '(no reason)';
}

function describe(signal: AcceptedSignal): string {
  const decision =
    signal.name === agentSignals.approval ? parseApprovalDecision(signal.payload) : undefined;
  const what =
    decision === undefined
      ? signal.name
      : `${decision.approved ? 'approve' : 'reject'} ${decision.callId}` +
        (decision.approved ? ` hash ${decision.argsHash?.slice(0, 6) ?? 'none'}` : '');
  return `seq ${signal.seq} ${what} (${signal.via}, seen ${signal.observed.status})`;
}
