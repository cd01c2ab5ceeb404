import { z } from 'zod';
import type { JsonObject, JsonValue } from '../json.js';
import { parseToolArgs } from '../tool.js';
import { isAgent, type Capability } from './capability.js';
import { jsonData } from './json-data.js';
import { planLimitBreach, planLimits, type PlanLimitBreach } from './plan-limits.js';
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

/** Node ids the pattern allows that a plan may not use: an object key that would set a prototype. */
const reservedNodeIds: ReadonlySet<string> = new Set(['__proto__']);

const planNodeSchema = z.object({
  id: z.string().regex(nodeIdPattern, 'a node id is 1 to 64 letters, digits, "_" or "-"'),
  capability: z.string(),
  input: jsonData,
  dependsOn: z.array(z.string()).default([]),
});

/** Validates the shape of a plan (the graph is checked by `validatePlan`). */
export const planSchema = z.object({
  nodes: z.array(planNodeSchema),
  output: jsonData.optional(),
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
  /** Nodes a plan may have. @defaultValue planLimits.maxNodes */
  maxNodes?: number;
}

/**
 * A checked plan, or every problem found, worded for the planning model; `breach` when the answer is over
 * one of `planLimits` (then its problem is the only one named, the rest of the answer unchecked).
 */
export type PlanCheck =
  { ok: true; plan: Plan } | { ok: false; problems: string[]; breach?: PlanLimitBreach };

/**
 * Parses and checks a planning model's answer: JSON, the plan's limits, the plan shape, unique, unused and
 * unreserved ids, known capabilities, dependencies that exist, references only to dependencies, no cycle,
 * and tool inputs without references matching the tool's schema. Its cost grows with the answer's length.
 */
export function validatePlan(answer: string, context: PlanContext): PlanCheck {
  let candidate: unknown;
  try {
    candidate = JSON.parse(answer);
  } catch (error) {
    return { ok: false, problems: [`The answer is not JSON: ${(error as Error).message}.`] };
  }
  const breach = planLimitBreach(candidate, context.maxNodes ?? planLimits.maxNodes);
  if (breach !== undefined) return { ok: false, problems: [breach.message], breach };
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
    if (reservedNodeIds.has(node.id)) {
      problems.push(`Node id "${node.id}" is reserved; pick another id.`);
    }
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
  const dependsOn = new Set(node.dependsOn);
  for (const ref of refs) {
    if (!dependsOn.has(ref.node)) {
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

/**
 * A cycle among the plan's own nodes, as the ids along it (first repeated last), if there is one. A
 * depth-first walk with its own stack: a chain of thousands of nodes is no deeper a call stack than one.
 */
function findCycle(nodes: readonly PlanNode[]): string[] | undefined {
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const state = new Map<string, 'visiting' | 'done'>();
  for (const root of nodes) {
    if (state.has(root.id)) continue;
    // Each frame: a node on the current path and how many of its dependencies were walked.
    const path: Array<{ id: string; next: number }> = [{ id: root.id, next: 0 }];
    state.set(root.id, 'visiting');
    while (path.length > 0) {
      const frame = path.at(-1)!;
      const dependsOn = byId.get(frame.id)?.dependsOn ?? [];
      if (frame.next >= dependsOn.length) {
        state.set(frame.id, 'done');
        path.pop();
        continue;
      }
      const dependency = dependsOn[frame.next]!;
      frame.next += 1;
      if (!byId.has(dependency) || state.get(dependency) === 'done') continue;
      if (state.get(dependency) === 'visiting') {
        const from = path.findIndex((step) => step.id === dependency);
        return [...path.slice(from).map((step) => step.id), dependency];
      }
      state.set(dependency, 'visiting');
      path.push({ id: dependency, next: 0 });
    }
  }
  return undefined;
}
