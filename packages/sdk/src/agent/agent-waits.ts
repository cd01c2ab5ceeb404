import { z } from 'zod';
import { decideHeldCalls, undecidedViews, type HeldCall, type HoldContext } from '../approvals.js';
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
export function waitUntilTool(
  options: { name?: string; maxSeconds?: number } = {},
): Tool<WaitArgs, JsonValue> {
  const maxSeconds = options.maxSeconds ?? 90 * 24 * 3600;
  const tool = {
    name: options.name ?? 'wait_until',
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

/**
 * Takes signals into the state: decisions on held calls, and user messages for the inbox (a steer also
 * rejects the calls still waiting and cuts a sleep short). Then applies the policy's timeout to calls past
 * their deadline. Signals of other names are consumed unread. Throws `APPROVAL_TIMEOUT` under
 * `onTimeout: 'fail'`.
 */
export function takeSignals(
  state: AgentState,
  signals: readonly RunSignal[],
  context: HoldContext,
): AgentState {
  const inbox = [...(state.inbox ?? [])];
  let steered = false;
  for (const signal of signals) {
    if (signal.name !== agentSignals.followUp && signal.name !== agentSignals.steer) continue;
    const content = messageText(signal.payload);
    if (content === undefined) continue;
    const steer = signal.name === agentSignals.steer;
    inbox.push({ kind: steer ? 'steer' : 'followUp', content });
    steered ||= steer;
  }
  const next: AgentState = { ...state };
  if (inbox.length > 0) next.inbox = inbox;
  const early = earlyDecisionsOf(state, signals);
  if (early.length > 0) next.earlyDecisions = early;
  if (state.held === undefined) return next;
  // A steer interrupts the plan: what still waits for a decision is answered as not approved.
  const steeredOff = steered
    ? state.held.approvals.map((call) =>
        call.decision !== undefined
          ? call
          : {
              ...call,
              decision: {
                approved: false,
                reason: 'The user sent new instructions before this call was approved',
              },
            },
      )
    : state.held.approvals;
  const approvals = decideHeldCalls(steeredOff, signals, context);
  const sleep = state.held.sleep;
  next.held = {
    ...state.held,
    approvals,
    ...(sleep === undefined
      ? {}
      : { sleep: steered ? { ...sleep, interruptedAt: context.now } : { ...sleep } }),
  };
  return next;
}
