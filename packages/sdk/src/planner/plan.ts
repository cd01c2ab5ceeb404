import { z } from 'zod';
import type { JsonObject, JsonValue } from '../json.js';
import { parseToolArgs } from '../tool.js';
import { isAgent, type Capability } from './capability.js';
import { collectRefs } from './refs.js';

/** One node of a plan: a capability to dispatch, its input, and the nodes that must finish first. */
export interface PlanNode {
  id: string;
  capability: string;
  /** JSON for the capability; `{ "$ref": "nodeId.path" }` anywhere in it names a dependency's output. */
  input: JsonValue;
  dependsOn: string[];
}

/** A plan as the planning model answers it. */
export interface Plan {
  nodes: PlanNode[];
  /** What the run returns, with `$ref`s; without it, the outputs of the nodes nothing depends on. */
  output?: JsonValue;
}

/** Node ids: what a run id segment and an effect id segment can hold. */
export const nodeIdPattern = /^[A-Za-z0-9_-]{1,64}$/;

const planNodeSchema = z.object({
  id: z.string().regex(nodeIdPattern, 'a node id is 1 to 64 letters, digits, "_" or "-"'),
  capability: z.string(),
  input: z.json(),
  dependsOn: z.array(z.string()).default([]),
});

/** Validates the shape of a plan (the graph is checked by `validatePlan`). */
export const planSchema = z.object({
  nodes: z.array(planNodeSchema),
  output: z.json().optional(),
}) as unknown as z.ZodType<Plan>;

/** The JSON Schema the planning model's answer must follow. */
export function planJsonSchema(capabilityNames: readonly string[]): JsonObject {
  return {
    type: 'object',
    properties: {
      nodes: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            id: { type: 'string', pattern: nodeIdPattern.source },
            capability: { type: 'string', enum: [...capabilityNames] },
            input: { description: 'The capability input; {"$ref":"nodeId.path"} names an output.' },
            dependsOn: { type: 'array', items: { type: 'string' } },
          },
          required: ['id', 'capability', 'input', 'dependsOn'],
        },
      },
      output: { description: 'What the plan returns, with {"$ref":"nodeId.path"} naming outputs.' },
    },
    required: ['nodes'],
  };
}

/** What a new plan is checked against: the capabilities and the nodes earlier plans already ran. */
export interface PlanContext {
  capabilities: ReadonlyMap<string, Capability>;
  /** Ids of nodes that completed; a new plan may depend on and refer to them. */
  completed: ReadonlySet<string>;
  /** Ids of nodes that ran and did not complete; a new plan may not reuse or depend on them. */
  failed: ReadonlySet<string>;
}

/** A checked plan, or every problem found, worded for the planning model. */
export type PlanCheck = { ok: true; plan: Plan } | { ok: false; problems: string[] };

/**
 * Parses and checks a planning model's answer: JSON, the plan shape, unique and unused ids, known
 * capabilities, dependencies that exist, references only to dependencies, no cycle, and tool inputs
 * without references matching the tool's schema.
 */
export function validatePlan(answer: string, context: PlanContext): PlanCheck {
  let candidate: unknown;
  try {
    candidate = JSON.parse(answer);
  } catch (error) {
    return { ok: false, problems: [`The answer is not JSON: ${(error as Error).message}.`] };
  }
  const parsed = planSchema.safeParse(candidate);
  if (!parsed.success) {
    return {
      ok: false,
      problems: [`The plan has the wrong shape: ${z.prettifyError(parsed.error)}`],
    };
  }
  const plan = parsed.data;
  const problems: string[] = [];
  if (plan.nodes.length === 0 && context.completed.size === 0) {
    problems.push('A plan needs at least one node.');
  }

  const ids = new Set<string>();
  for (const node of plan.nodes) {
    if (ids.has(node.id)) problems.push(`Two nodes have the id "${node.id}".`);
    if (context.completed.has(node.id) || context.failed.has(node.id)) {
      problems.push(`Node id "${node.id}" was already used by a node that ran; pick a new id.`);
    }
    ids.add(node.id);
  }

  for (const node of plan.nodes) {
    problems.push(...nodeProblems(node, ids, context));
  }
  if (plan.output !== undefined) {
    for (const ref of collectRefs(plan.output)) {
      if (!ids.has(ref.node) && !context.completed.has(ref.node)) {
        problems.push(`The plan output refers to "${ref.node}", which is not a node of the plan.`);
      }
    }
  }
  const cycle = findCycle(plan.nodes);
  if (cycle !== undefined) problems.push(`The plan has a cycle: ${cycle.join(' -> ')}.`);
  return problems.length === 0 ? { ok: true, plan } : { ok: false, problems };
}

function nodeProblems(node: PlanNode, ids: ReadonlySet<string>, context: PlanContext): string[] {
  const problems: string[] = [];
  const capability = context.capabilities.get(node.capability);
  if (capability === undefined) {
    const known = [...context.capabilities.keys()].join(', ');
    problems.push(
      `Node "${node.id}" uses the unknown capability "${node.capability}". Capabilities: ${known}.`,
    );
  }
  for (const dependency of node.dependsOn) {
    if (context.failed.has(dependency) && !ids.has(dependency)) {
      problems.push(`Node "${node.id}" depends on "${dependency}", which failed.`);
    } else if (!ids.has(dependency) && !context.completed.has(dependency)) {
      problems.push(
        `Node "${node.id}" depends on "${dependency}", which is neither a node of the plan nor a completed node.`,
      );
    }
  }
  const refs = collectRefs(node.input);
  for (const ref of refs) {
    if (!node.dependsOn.includes(ref.node)) {
      problems.push(
        `Node "${node.id}" refers to "${ref.node}" in its input but does not list it in dependsOn.`,
      );
    }
  }
  if (capability !== undefined && refs.length === 0 && !isAgent(capability.executable)) {
    const args = parseToolArgs(capability.executable, node.input);
    if (!args.ok) problems.push(`Node "${node.id}": ${args.message}`);
  }
  return problems;
}

/** A cycle among the plan's own nodes, as the ids along it (first repeated last), if there is one. */
function findCycle(nodes: readonly PlanNode[]): string[] | undefined {
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (id: string): string[] | undefined => {
    const seen = state.get(id);
    if (seen === 'done') return undefined;
    if (seen === 'visiting') return [...path.slice(path.indexOf(id)), id];
    state.set(id, 'visiting');
    path.push(id);
    for (const dependency of byId.get(id)?.dependsOn ?? []) {
      if (!byId.has(dependency)) continue;
      const cycle = visit(dependency);
      if (cycle !== undefined) return cycle;
    }
    path.pop();
    state.set(id, 'done');
    return undefined;
  };
  for (const node of nodes) {
    const cycle = visit(node.id);
    if (cycle !== undefined) return cycle;
  }
  return undefined;
}
