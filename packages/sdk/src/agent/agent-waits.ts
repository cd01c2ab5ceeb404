import { z } from 'zod';
import { CairnError } from '../errors.js';
import type { JsonValue } from '../json.js';
import type { RunSignal } from '../store/waits.js';
import type { Tool } from '../tool.js';
import {
  agentSignals,
  messageText,
  parseApprovalDecision,
  toolArgsHash,
  type PendingApprovalView,
} from './agent-signals.js';
import type { AgentState, HeldCall, HeldTrip } from './agent-state.js';

/**
 * Which tool calls wait for a person's decision before they run: per tool, always (`true`) or when a
 * predicate of the call's arguments says so. The predicate runs in the step function: it must be pure.
 */
export interface ApprovalPolicy {
  tools: Readonly<Record<string, boolean | ((args: never) => boolean)>>;
  /** How long a call waits for a decision. @defaultValue no limit */
  timeoutMs?: number;
  /**
   * What an undecided call becomes at its deadline: `reject` answers the model that it was not approved;
   * `fail` ends the run with `APPROVAL_TIMEOUT`. @defaultValue 'reject'
   */
  onTimeout?: 'reject' | 'fail';
}

/** What a step decides held calls with: the policy, and its event's time. */
export interface HoldContext {
  approval: ApprovalPolicy | undefined;
  now: number;
}

/** True when the policy holds this call back for a decision. A predicate that throws holds it too. */
export function needsApproval(
  policy: ApprovalPolicy | undefined,
  tool: string,
  args: unknown,
): boolean {
  const rule = policy?.tools[tool];
  if (rule === undefined || rule === false) return false;
  if (rule === true) return true;
  try {
    return rule(args as never) === true;
  } catch {
    return true;
  }
}

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

/** A call held for approval, as the policy found it. */
export function heldCall(
  callId: string,
  tool: string,
  args: JsonValue,
  context: HoldContext,
): HeldCall {
  const { timeoutMs } = context.approval ?? {};
  return {
    callId,
    tool,
    args,
    argsHash: toolArgsHash(args),
    deadline: timeoutMs === undefined ? null : context.now + timeoutMs,
  };
}

/** What the run's stored wait tells a reader: the calls waiting for a decision, and a sleep. */
export function waitDetail(held: HeldTrip): JsonValue {
  const approvals: PendingApprovalView[] = held.approvals
    .filter((call) => call.decision === undefined)
    .map(({ callId, tool, args, argsHash, deadline }) => ({
      callId,
      tool,
      args,
      argsHash,
      deadline,
    }));
  return {
    approvals: approvals as unknown as JsonValue,
    ...(held.sleep === undefined ? {} : { sleepingUntil: held.sleep.until }),
  };
}

/**
 * Takes signals into the state: decisions on held calls, and user messages for the inbox (a steer also
 * rejects the calls still waiting and cuts a sleep short). Then applies the policy's timeout to calls past
 * their deadline. Signals of other names are consumed unread. Throws `APPROVAL_TIMEOUT` under `onTimeout: 'fail'`.
 */
export function takeSignals(
  state: AgentState,
  signals: readonly RunSignal[],
  context: HoldContext,
): AgentState {
  const inbox = [...(state.inbox ?? [])];
  const held: HeldTrip | undefined =
    state.held === undefined
      ? undefined
      : {
          ...state.held,
          approvals: state.held.approvals.map((call) => ({ ...call })),
          ...(state.held.sleep === undefined ? {} : { sleep: { ...state.held.sleep } }),
        };
  const undecided = () => held?.approvals.filter((call) => call.decision === undefined) ?? [];
  for (const signal of signals) {
    if (signal.name === agentSignals.approval) {
      const decision = parseApprovalDecision(signal.payload);
      const call = undecided().find((c) => c.callId === decision?.callId);
      // An approval of other arguments than the call waits with approves nothing (the client refuses to send
      // one; a signal sent by other means is ignored here).
      if (call === undefined || decision === undefined) continue;
      if (decision.approved && decision.argsHash !== call.argsHash) continue;
      call.decision = {
        approved: decision.approved,
        ...(decision.by === undefined ? {} : { by: decision.by }),
        ...(decision.reason === undefined ? {} : { reason: decision.reason }),
      };
    } else if (signal.name === agentSignals.followUp || signal.name === agentSignals.steer) {
      const content = messageText(signal.payload);
      if (content === undefined) continue;
      inbox.push({ kind: signal.name === agentSignals.steer ? 'steer' : 'followUp', content });
      if (signal.name === agentSignals.steer && held !== undefined) {
        for (const call of undecided()) {
          call.decision = {
            approved: false,
            reason: 'The user sent new instructions before this call was approved.',
          };
        }
        if (held.sleep !== undefined) held.sleep.interruptedAt = context.now;
      }
    }
  }
  for (const call of undecided()) {
    if (call.deadline === null || call.deadline > context.now) continue;
    if (context.approval?.onTimeout === 'fail') {
      throw new CairnError(
        'APPROVAL_TIMEOUT',
        `Tool call "${call.callId}" (${call.tool}) got no decision within ${context.approval.timeoutMs} ms.`,
        { data: { callId: call.callId, tool: call.tool } },
      );
    }
    call.decision = {
      approved: false,
      reason: `No decision was made within ${context.approval?.timeoutMs} ms.`,
    };
  }
  const next: AgentState = { ...state };
  if (held !== undefined) next.held = held;
  if (inbox.length > 0) next.inbox = inbox;
  return next;
}
