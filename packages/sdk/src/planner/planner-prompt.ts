import { capabilityInputSchema, isAgent, type Capability } from './capability.js';
import { planLimits } from './plan-limits.js';
import type { FrozenPlan, LedgerEntry } from './planner-state.js';

/** The planning model's system prompt: the plan format, the `$ref` convention and the capabilities. */
export function plannerSystemPrompt(
  capabilities: readonly Capability[],
  maxParallel: number,
  maxPlanNodes: number,
  instructions: string | undefined,
): string {
  const listed = capabilities
    .map((capability) => {
      const kind = isAgent(capability.executable) ? 'agent' : 'tool';
      const schema = JSON.stringify(capabilityInputSchema(capability));
      return `- ${capability.name} (${kind}): ${capability.description}\n  input JSON Schema: ${schema}`;
    })
    .join('\n');
  return [
    'You are the planner of a durable workflow. Break the goal into a plan: a directed acyclic graph of',
    'nodes, each dispatching one capability. Answer with the plan as JSON only, in this shape:',
    '{"nodes":[{"id":"...","capability":"...","input":...,"dependsOn":["..."]}],"output":...}',
    '',
    'Rules:',
    '- id: 1 to 64 letters, digits, "_" or "-", not "__proto__"; unique, and never the id of a node that',
    '  already ran.',
    '- capability: one of the capabilities listed below.',
    '- dependsOn: ids of the nodes that must finish first: nodes of this plan, or completed nodes of',
    '  an earlier plan. No cycles.',
    "- input: JSON matching the capability's input schema. Wherever a value should be the output of a",
    '  node listed in dependsOn, write {"$ref":"nodeId"}, or {"$ref":"nodeId.field.0.name"} for a part of',
    '  it (object fields and array indexes separated by dots); the object is replaced by that value.',
    '- output (optional): JSON with {"$ref":...} as above: what the plan returns. Without it, the plan',
    '  returns the outputs of the nodes no other node depends on, by id.',
    `- Nodes whose dependencies have finished run in parallel, at most ${maxParallel} at a time.`,
    `- At most ${maxPlanNodes} nodes; inputs and the output nest at most ${planLimits.maxDepth} levels of arrays and objects.`,
    '',
    'Capabilities:',
    listed,
    ...(instructions === undefined ? [] : ['', instructions]),
  ].join('\n');
}

/** The first message: the goal. */
export function goalMessage(goal: string): string {
  return `Goal: ${goal}`;
}

/** Tells the planning model why its plan was rejected. */
export function rejectionMessage(problems: readonly string[], attemptsLeft: number): string {
  return [
    'The plan was rejected and nothing of it ran:',
    ...problems.map((problem) => `- ${problem}`),
    `Answer with a corrected plan (${attemptsLeft} ${attemptsLeft === 1 ? 'attempt' : 'attempts'} left).`,
  ].join('\n');
}

/** Asks the planning model to plan the unfinished part after nodes failed. */
export function replanMessage(
  plan: FrozenPlan,
  ledger: readonly LedgerEntry[],
  failed: readonly LedgerEntry[],
): string {
  const completed = ledger
    .filter((entry) => entry.status === 'completed')
    .map((entry) => ({ id: entry.id, capability: entry.capability, output: entry.output ?? null }));
  const ran = new Set(ledger.map((entry) => entry.id));
  const notRun = plan.nodes.filter((node) => !ran.has(node.id)).map((node) => node.id);
  const used = ledger.map((entry) => entry.id);
  return [
    ...failed.map(describeFailure),
    `Completed nodes (usable in dependsOn and $ref): ${JSON.stringify(completed)}`,
    `Nodes of the plan that did not run: ${notRun.length === 0 ? 'none' : notRun.join(', ')}.`,
    `Plan the unfinished part of the goal. Ids already used, which you may not reuse: ${used.join(', ')}.`,
  ].join('\n');
}

function describeFailure(entry: LedgerEntry): string {
  if (entry.status === 'unknown') {
    return (
      `Node "${entry.id}" (${entry.capability}) was in flight when the run was interrupted: it may or ` +
      'may not have taken effect. Verify its effect before doing it again.'
    );
  }
  const error =
    entry.error === undefined ? 'no answer' : `${entry.error.code}: ${entry.error.message}`;
  return `Node "${entry.id}" (${entry.capability}) failed: ${error}`;
}
