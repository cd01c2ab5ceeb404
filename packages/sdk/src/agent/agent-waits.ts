import { z } from 'zod';
import {
  undecidedViews,
  withDecision,
  withTimeouts,
  type HeldCall,
  type HoldContext,
} from '../approvals.js';
import { CairnError } from '../errors.js';
import type { JsonValue } from '../json.js';
import type { RunSignal } from '../store/waits.js';
import type { Tool } from '../tool.js';
import { agentSignals, messageText, parseApprovalDecision } from './agent-signals.js';
import type { AgentState, EarlyDecision, HeldTrip } from './agent-state.js';

const waitToolBrand = Symbol.for('@cairn/sdk/wait-until-tool');
const waitInput = z
  .object({
    seconds: z.number().positive().optional().describe('How long to wait, in seconds.'),
    until: z.iso.datetime({ offset: true }).optional().describe('When to continue (ISO 8601).'),
  })
  .refine((args) => (args.seconds === undefined) !== (args.until === undefined), {
    message: 'Give exactly one of `seconds` and `until`.',
  });
type WaitArgs = z.output<typeof waitInput>;

/**
 * A tool that lets the model put the run to sleep ("check back in two days"): the run waits, holding nothing,
 * and the call's result (when it woke) is read in the next trip. A steer message cuts the sleep short.
 */
export function waitUntilTool<const Name extends string = 'wait_until'>(
  options: { name?: Name; maxSeconds?: number } = {},
): Tool<WaitArgs, JsonValue, NoInfer<Name>> {
  const maxSeconds = options.maxSeconds ?? 90 * 24 * 3600;
  const tool = {
    // Its name as a literal type, so an agent's approval rules stay typed with it among the tools.
    name: options.name ?? ('wait_until' as Name),
    description:
      'Pause this task and continue later: after `seconds`, or at `until` (ISO 8601). ' +
      `At most ${maxSeconds} seconds. Use it to check back on something that takes time.`,
    input: waitInput,
    idempotent: true,
    retry: undefined,
    execute: () => {
      throw new CairnError('INVALID_ARGUMENT', 'wait_until is performed by the agent, not called.');
    },
    [waitToolBrand]: maxSeconds,
  };
  return tool;
}

/** The longest sleep a wait tool allows, or undefined for any other tool. */
export function waitToolLimit(tool: object): number | undefined {
  const limit = (tool as { [waitToolBrand]?: unknown })[waitToolBrand];
  return typeof limit === 'number' ? limit : undefined;
}

/** When a wait tool's call wakes, from its (valid) arguments. */
export function sleepUntil(args: WaitArgs, now: number, maxSeconds: number): number {
  const requested =
    args.seconds !== undefined ? now + args.seconds * 1000 : Date.parse(args.until!);
  return Math.min(requested, now + maxSeconds * 1000);
}

/** The most decisions on calls not held yet a run keeps: a flood of stray decisions cannot grow its state. */
const maxEarlyDecisions = 64;

/** Decisions kept for calls not held yet: those already kept, and those among `signals` naming no held call. */
function earlyDecisionsOf(state: AgentState, signals: readonly RunSignal[]): EarlyDecision[] {
  const held = new Set(state.held?.approvals.map((call) => call.callId) ?? []);
  const early = [...(state.earlyDecisions ?? [])];
  for (const signal of signals) {
    if (signal.name !== agentSignals.approval) continue;
    const decision = parseApprovalDecision(signal.payload);
    if (decision === undefined || held.has(decision.callId)) continue;
    // The first decision on a call counts, as for a held one.
    if (!early.some((kept) => kept.callId === decision.callId)) early.push(decision);
  }
  return early.slice(-maxEarlyDecisions);
}

/**
 * A call held now, with the decision that arrived before it was held, if one names it and (to approve) its
 * arguments; that decision is then used up.
 */
export function withEarlyDecision(
  state: AgentState,
  call: HeldCall,
): { call: HeldCall; earlyDecisions: EarlyDecision[] | undefined } {
  const early = state.earlyDecisions ?? [];
  const found = early.find((decision) => decision.callId === call.callId);
  const usable = found !== undefined && (!found.approved || found.argsHash === call.argsHash);
  if (!usable) return { call, earlyDecisions: state.earlyDecisions };
  const rest = early.filter((decision) => decision !== found);
  const { callId: _callId, argsHash: _argsHash, ...decision } = found;
  return { call: { ...call, decision }, earlyDecisions: rest.length === 0 ? undefined : rest };
}

/** What the run's stored wait tells a reader: the calls waiting for a decision, and a sleep. */
export function waitDetail(held: HeldTrip): JsonValue {
  return {
    approvals: undecidedViews(held.approvals),
    ...(held.sleep === undefined ? {} : { sleepingUntil: held.sleep.until }),
  };
}

/** Why a call still waiting for a decision is answered as not approved when a steer arrives. */
const steeredOffReason = 'The user sent new instructions before this call was approved';

/**
 * Takes signals into the state, each in its turn in mailbox order: a decision decides the held call it names
 * when nothing decided it before; a follow-up or steer joins the inbox, and a steer also rejects the calls still
 * undecided at its place and cuts a sleep short, so it never undoes an approval that came before it. Then applies
 * the policy's timeout to calls past their deadline. Signals of other names are consumed unread. Throws
 * `APPROVAL_TIMEOUT` under `onTimeout: 'fail'`.
 */
export function takeSignals(
  state: AgentState,
  signals: readonly RunSignal[],
  context: HoldContext,
): AgentState {
  const inbox = [...(state.inbox ?? [])];
  let approvals = state.held?.approvals ?? [];
  let interruptedAt: number | undefined;
  for (const signal of signals) {
    if (signal.name === agentSignals.approval) {
      approvals = withDecision(approvals, signal);
      continue;
    }
    if (signal.name !== agentSignals.followUp && signal.name !== agentSignals.steer) continue;
    const content = messageText(signal.payload);
    if (content === undefined) continue;
    const steer = signal.name === agentSignals.steer;
    inbox.push({ kind: steer ? 'steer' : 'followUp', content });
    if (!steer) continue;
    interruptedAt = context.now;
    approvals = approvals.map((call) =>
      call.decision !== undefined
        ? call
        : { ...call, decision: { approved: false, reason: steeredOffReason } },
    );
  }
  const next: AgentState = { ...state };
  if (inbox.length > 0) next.inbox = inbox;
  const early = earlyDecisionsOf(state, signals);
  if (early.length > 0) next.earlyDecisions = early;
  if (state.held === undefined) return next;
  const sleep = state.held.sleep;
  next.held = {
    ...state.held,
    approvals: withTimeouts(approvals, context),
    ...(sleep === undefined
      ? {}
      : { sleep: interruptedAt === undefined ? { ...sleep } : { ...sleep, interruptedAt } }),
  };
  return next;
}
