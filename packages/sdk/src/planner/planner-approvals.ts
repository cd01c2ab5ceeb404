import { agentSignals, toolArgsHash } from '../agent/agent-signals.js';
import {
  heldCall,
  needsApproval,
  rejectionMessage,
  undecidedViews,
  type ApprovalPolicy,
  type HeldCall,
} from '../approvals.js';
import type { SerializedError } from '../errors.js';
import type { JsonValue } from '../json.js';
import type { Command, PerformCommand } from '../runtime/step-function.js';
import type { PlanNode } from './plan.js';

/** Whether a ready node starts, waits for a decision, or was rejected, with the held calls after it. */
export type NodeGate =
  | { verdict: 'start' | 'hold'; awaiting: HeldCall[] }
  | { verdict: 'rejected'; awaiting: HeldCall[]; error: SerializedError };

/**
 * Decides whether a ready node may start under the approval policy: a node of a capability the policy holds
 * waits for a decision on its input (references resolved), recorded in `awaiting`; an approved one starts; a
 * rejected one fails with `TOOL_REJECTED` (and the planner replans around it, as after any failed node).
 * `ruleInput` is what the capability's rule reads (`CapabilityInput`: a tool's parsed arguments).
 */
export function gateNode(
  policy: ApprovalPolicy | undefined,
  awaiting: readonly HeldCall[],
  node: PlanNode,
  prepared: PerformCommand,
  ruleInput: unknown,
  now: number,
): NodeGate {
  const input = (prepared.effect.input ?? null) as JsonValue;
  if (!needsApproval(policy, node.capability, ruleInput))
    return { verdict: 'start', awaiting: [...awaiting] };
  const entry = awaiting.find((call) => call.callId === node.id);
  const others = awaiting.filter((call) => call !== entry);
  // A decision is about the input it was asked with: another input (a node id reused) asks again.
  if (entry === undefined || entry.argsHash !== toolArgsHash(input)) {
    const held = heldCall(node.id, node.capability, input, { approval: policy, now });
    return { verdict: 'hold', awaiting: [...others, held] };
  }
  if (entry.decision === undefined) return { verdict: 'hold', awaiting: [...awaiting] };
  if (entry.decision.approved) return { verdict: 'start', awaiting: others };
  return {
    verdict: 'rejected',
    awaiting: others,
    error: {
      name: 'CairnError',
      code: 'TOOL_REJECTED',
      message: rejectionMessage(entry.decision),
      retryable: false,
    },
  };
}

/** The wait of a planner whose only nodes left to start wait for decisions. */
export function waitForDecisions(awaiting: readonly HeldCall[]): Command {
  const deadlines = awaiting.flatMap((call) =>
    call.decision === undefined && call.deadline !== null ? [call.deadline] : [],
  );
  return {
    type: 'wait',
    ...(deadlines.length === 0 ? {} : { until: Math.min(...deadlines) }),
    signals: [agentSignals.approval],
    detail: { approvals: undecidedViews(awaiting) },
  };
}
