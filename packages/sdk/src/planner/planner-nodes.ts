import { CairnError, serializeError, type SerializedError } from '../errors.js';
import type { JsonValue } from '../json.js';
import type { Usage } from '../model.js';
import type { PerformCommand } from '../runtime/step-function.js';
import type { EffectOutcome } from '../store/contract.js';
import { parseToolArgs, toolCallPolicy } from '../tool.js';
import { isAgent, type Capability } from './capability.js';
import { nestsDeeperThan, planLimits } from './plan-limits.js';
import type { PlanNode } from './plan.js';
import type { ChildReport, LedgerEntry } from './planner-state.js';
import { resolveRefs } from './refs.js';

/** What an agent node's effect settles with: the child's output and its report. */
export interface AgentNodeValue {
  output: JsonValue;
  child: ChildReport;
}

/** The effect id of a node; its last segment is the node id. */
export function nodeEffectId(nodeId: string): string {
  return `node/${nodeId}`;
}

/** A node's effect, or why it cannot run: its ledger entry's input (when built) and error. */
export type Prepared =
  PerformCommand | { type: 'rejected'; entry: Partial<LedgerEntry> & { error: SerializedError } };

const { maxDepth } = planLimits;

function depthError(code: 'TOOL_INPUT_INVALID' | 'TOOL_FAILED', what: string): CairnError {
  return new CairnError(
    code,
    `${what} is nested deeper than ${maxDepth} levels of arrays and objects (planLimits.maxDepth).`,
    { data: { limit: 'maxDepth', max: maxDepth } },
  );
}

/** Builds a node's effect from its input with its references resolved, or the reason it cannot run. */
export function prepare(
  capabilities: ReadonlyMap<string, Capability>,
  node: PlanNode,
  outputs: ReadonlyMap<string, JsonValue>,
): Prepared {
  const reject = (error: CairnError, input?: JsonValue): Prepared => ({
    type: 'rejected',
    entry:
      input === undefined
        ? { error: serializeError(error) }
        : { input, error: serializeError(error) },
  });
  const capability = capabilities.get(node.capability);
  if (capability === undefined) {
    return reject(
      new CairnError('TOOL_NOT_FOUND', `The planner has no capability "${node.capability}".`),
    );
  }
  const resolved = resolveRefs(node.input, outputs);
  if (!resolved.ok) return reject(new CairnError('REF_UNRESOLVED', resolved.message));
  if (nestsDeeperThan(resolved.value, maxDepth)) {
    return reject(
      depthError('TOOL_INPUT_INVALID', `The input of node "${node.id}", its references resolved,`),
    );
  }
  const base = { type: 'perform' as const, id: nodeEffectId(node.id) };
  const { executable } = capability;
  if (isAgent(executable)) {
    const input =
      typeof resolved.value === 'string' ? resolved.value : JSON.stringify(resolved.value);
    return {
      ...base,
      effect: { kind: 'node', node: node.id, capability: node.capability, input },
      idempotent: true,
    };
  }
  const args = parseToolArgs(executable, resolved.value);
  if (!args.ok) return reject(new CairnError('TOOL_INPUT_INVALID', args.message), resolved.value);
  return {
    ...base,
    effect: { kind: 'node', node: node.id, capability: node.capability, input: resolved.value },
    ...toolCallPolicy(executable),
  };
}

/** The fields of a node's ledger entry that do not depend on how it ended. */
export function entryOf(
  node: PlanNode,
  revision: number,
): Pick<LedgerEntry, 'id' | 'capability' | 'revision'> {
  return { id: node.id, capability: node.capability, revision };
}

/**
 * How a node settled, as its ledger entry, with the usage of its child run (counted even when the child's
 * output is refused). An output nested deeper than `planLimits.maxDepth` fails the node.
 */
export function settledEntry(
  capabilities: ReadonlyMap<string, Capability>,
  node: PlanNode,
  revision: number,
  outcome: EffectOutcome,
  outputs: ReadonlyMap<string, JsonValue>,
): { entry: LedgerEntry; usage?: Usage } {
  // The input it was dispatched with: its dependencies' outputs have not changed since.
  const prepared = prepare(capabilities, node, outputs);
  const entry =
    prepared.type === 'perform' && prepared.effect.input !== undefined
      ? { ...entryOf(node, revision), input: prepared.effect.input }
      : entryOf(node, revision);
  if (outcome.status === 'unknown') {
    // In flight at a crash, or abandoned past its timeout (`outcome.error` says so).
    const error = new CairnError(
      'OUTCOME_UNKNOWN',
      outcome.error === undefined
        ? 'It was in flight when the run was interrupted: it may or may not have taken effect.'
        : `${outcome.error.message} It may or may not have taken effect.`,
    );
    return { entry: { ...entry, status: 'unknown', error: serializeError(error) } };
  }
  if (outcome.status === 'error') {
    return { entry: { ...entry, status: 'failed', error: outcome.error } };
  }
  const capability = capabilities.get(node.capability);
  const agentValue =
    capability !== undefined && isAgent(capability.executable)
      ? (outcome.value as unknown as AgentNodeValue)
      : undefined;
  const output = agentValue === undefined ? outcome.value : agentValue.output;
  const child = agentValue === undefined ? {} : { child: agentValue.child };
  const usage = agentValue === undefined ? {} : { usage: agentValue.child.usage };
  if (nestsDeeperThan(output, maxDepth)) {
    const error = depthError('TOOL_FAILED', `The output of node "${node.id}"`);
    return {
      entry: { ...entry, status: 'failed', error: serializeError(error), ...child },
      ...usage,
    };
  }
  return { entry: { ...entry, status: 'completed', output, ...child }, ...usage };
}
