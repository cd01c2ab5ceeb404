import type { JsonObject } from '../json.js';

/**
 * What a plan may hold. A plan over a limit fails its run with `PLAN_INVALID` before any node runs; the
 * model is not asked again (an answer that size is no draft to correct). `maxNodes` is the default of a
 * planner's `maxPlanNodes`. `maxDepth` bounds the nesting of arrays and objects in a node's input and in
 * the plan's output (and in what a node's input becomes once its references are resolved, and in a node's
 * output), far below what any step of validating, storing or resuming a run can take.
 */
export const planLimits: { readonly maxNodes: number; readonly maxDepth: number } = Object.freeze({
  maxNodes: 10_000,
  maxDepth: 128,
});

/** A plan over one of `planLimits`: what the run's `PLAN_INVALID` error says and carries as data. */
export interface PlanLimitBreach {
  message: string;
  data: JsonObject;
}

/**
 * Whether a value nests arrays and objects more than `limit` levels deep (a scalar is 0, `[]` is 1). It walks
 * without recursion and stops at the first level past the limit, so any depth is safe to ask about.
 */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    if (top.value === null || typeof top.value !== 'object') continue;
    const depth = top.depth + 1;
    if (depth > limit) return true;
    const children = Array.isArray(top.value) ? top.value : Object.values(top.value);
    for (const child of children) {
      if (child !== null && typeof child === 'object') stack.push({ value: child, depth });
    }
  }
  return false;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const depthText = `${planLimits.maxDepth} levels of arrays and objects (planLimits.maxDepth)`;

/**
 * The first limit a parsed planning answer is over, checked before its shape is (which would recurse into
 * it): the node count, then each node's input, the output, and the whole answer, which the plan, its nodes
 * array and a node add three levels to.
 */
export function planLimitBreach(candidate: unknown, maxNodes: number): PlanLimitBreach | undefined {
  const { maxDepth } = planLimits;
  if (isObject(candidate)) {
    const { nodes, output } = candidate;
    if (Array.isArray(nodes)) {
      if (nodes.length > maxNodes) {
        return {
          message: `The plan has ${nodes.length} nodes; a plan may have at most ${maxNodes} (maxPlanNodes).`,
          data: { limit: 'maxNodes', max: maxNodes, actual: nodes.length },
        };
      }
      for (const [index, node] of nodes.entries()) {
        if (!isObject(node) || !nestsDeeperThan(node.input, maxDepth)) continue;
        const id = typeof node.id === 'string' ? node.id : `#${index}`;
        return {
          message: `Node "${id}" has an input nested deeper than ${depthText}.`,
          data: { limit: 'maxDepth', max: maxDepth, node: id },
        };
      }
    }
    if (nestsDeeperThan(output, maxDepth)) {
      return {
        message: `The plan output is nested deeper than ${depthText}.`,
        data: { limit: 'maxDepth', max: maxDepth, part: 'output' },
      };
    }
  }
  if (nestsDeeperThan(candidate, maxDepth + 3)) {
    return {
      message: `The answer is nested deeper than a plan whose inputs and output nest ${depthText}.`,
      data: { limit: 'maxDepth', max: maxDepth, part: 'answer' },
    };
  }
  return undefined;
}
