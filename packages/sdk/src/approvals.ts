import { z } from 'zod';
import { agentSignals, parseApprovalDecision, toolArgsHash } from './agent/agent-signals.js';
import { CairnError } from './errors.js';
import type { JsonValue } from './json.js';
import type { RunSignal } from './store/waits.js';
import type { Capability, CapabilityInput } from './planner/capability.js';
import type { AnyTool, ToolArgs } from './tool.js';

/** Whether a call waits for a decision: always (`true`), never, or when a (pure) predicate of its arguments says so. */
export type ApprovalRule<Args> = boolean | ((args: Args) => boolean);

/**
 * The approval rules of an agent's tools, by name. When the tools' names are literal types (`defineTool` keeps
 * them), each predicate takes that tool's own arguments (its input schema's output), and a name that is not one
 * of the tools is a type error; over tools typed only as `AnyTool`, any name and any arguments.
 */
export type ToolApprovalRules<Tools extends AnyTool> = string extends Tools['name']
  ? // eslint-disable-next-line @typescript-eslint/no-explicit-any
    Readonly<Record<string, ApprovalRule<any>>>
  : { readonly [T in Tools as T['name']]?: ApprovalRule<ToolArgs<T>> };

/** The approval rules of a planner's capabilities, by name, typed as `ToolApprovalRules` types a tool's. */
export type CapabilityApprovalRules<Caps extends Capability> = string extends Caps['name']
  ? // eslint-disable-next-line @typescript-eslint/no-explicit-any
    Readonly<Record<string, ApprovalRule<any>>>
  : { readonly [C in Caps as C['name']]?: ApprovalRule<CapabilityInput<C>> };

/** An agent's approval policy, its rules typed by its tools (see `ToolApprovalRules`). */
export type AgentApprovalPolicy<Tools extends AnyTool = AnyTool> = Omit<ApprovalPolicy, 'tools'> & {
  tools: ToolApprovalRules<Tools>;
};

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

/** A call (an agent's tool call, a planner's node) held back by the approval policy until a person decides. */
export interface HeldCall {
  callId: string;
  tool: string;
  args: JsonValue;
  /** What an approval must name (`toolArgsHash` of `args`). */
  argsHash: string;
  /** When the policy's `onTimeout` decides it (ms since the epoch, on the runtime's clock), or null. */
  deadline: number | null;
  decision?: { approved: boolean; by?: string; reason?: string };
  /** Approved and commanded: its outcome arrives as a settled effect. */
  started?: boolean;
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

/** Validates a stored `HeldCall`. */
export const heldCallSchema = z.object({
  callId: z.string(),
  tool: z.string(),
  args: z.json(),
  argsHash: z.string(),
  deadline: z.number().nullable(),
  decision: z
    .object({ approved: z.boolean(), by: z.string().optional(), reason: z.string().optional() })
    .optional(),
  started: z.boolean().optional(),
});
/**
 * Takes decisions on held calls from approval signals, in mailbox order (an approval must name the arguments'
 * hash: one that names others approves nothing; the first decision on a call counts), then applies the policy's
 * timeout to calls past their deadline. Returns the calls with their decisions. Throws `APPROVAL_TIMEOUT` under
 * `onTimeout: 'fail'`.
 */
export function decideHeldCalls(
  calls: readonly HeldCall[],
  signals: readonly RunSignal[],
  context: HoldContext,
): HeldCall[] {
  let decided: HeldCall[] = [...calls];
  for (const signal of signals) decided = withDecision(decided, signal);
  return withTimeouts(decided, context);
}

/** The calls after one signal: an approval decides the undecided call it names (with its hash, to approve). */
export function withDecision(calls: readonly HeldCall[], signal: RunSignal): HeldCall[] {
  if (signal.name !== agentSignals.approval) return [...calls];
  const decision = parseApprovalDecision(signal.payload);
  if (decision === undefined) return [...calls];
  return calls.map((call) => {
    if (call.decision !== undefined || call.callId !== decision.callId) return call;
    if (decision.approved && decision.argsHash !== call.argsHash) return call;
    return {
      ...call,
      decision: {
        approved: decision.approved,
        ...(decision.by === undefined ? {} : { by: decision.by }),
        ...(decision.reason === undefined ? {} : { reason: decision.reason }),
      },
    };
  });
}

/**
 * The calls after the policy's timeout: each still undecided past its deadline is rejected, or (`onTimeout:
 * 'fail'`) `APPROVAL_TIMEOUT` is thrown. Decisions the mailbox holds are taken first: one the store accepted
 * counts, even when the deadline passed before the run woke to see it.
 */
export function withTimeouts(calls: readonly HeldCall[], context: HoldContext): HeldCall[] {
  return calls.map((call) => {
    if (call.decision !== undefined || call.deadline === null || call.deadline > context.now)
      return call;
    if (context.approval?.onTimeout === 'fail') {
      throw new CairnError(
        'APPROVAL_TIMEOUT',
        `"${call.callId}" (${call.tool}) got no decision within ${context.approval.timeoutMs} ms.`,
        { data: { callId: call.callId, tool: call.tool } },
      );
    }
    return {
      ...call,
      decision: {
        approved: false,
        reason: `No decision was made within ${context.approval?.timeoutMs} ms.`,
      },
    };
  });
}

/** What a stored wait lists of the calls still waiting for a decision (`client.get(runId).waitingFor`). */
export function undecidedViews(calls: readonly HeldCall[]): JsonValue {
  return calls
    .filter((call) => call.decision === undefined)
    .map(({ callId, tool, args, argsHash, deadline }) => ({
      callId,
      tool,
      args,
      argsHash,
      deadline,
    }));
}

/** The message a model (or a planner's replan) reads for a call that was not approved. */
export function rejectionMessage(decision: { by?: string; reason?: string }): string {
  const by = decision.by === undefined ? '' : ` by ${decision.by}`;
  return `This call was not approved${by}, so it was not run: ${decision.reason ?? 'no reason was given'}.`;
}
