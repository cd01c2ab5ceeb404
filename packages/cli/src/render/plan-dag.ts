/** A planner's plan as a DAG in text: its nodes by depth, each with its state and what it waits on. */
import type { PlanNodeState, PlanView } from '@cairn/sdk';
import type { Paint, Style } from './style.js';
import { renderTable } from './table.js';

const marks: Record<PlanNodeState, string> = {
  completed: '✓',
  failed: '✗',
  unknown: '?',
  running: '▶',
  awaiting: '⏸',
  ready: '○',
  waiting: '·',
};

function nodePaint(state: PlanNodeState, style: Style): Paint {
  switch (state) {
    case 'completed':
      return style.good;
    case 'failed':
      return style.bad;
    case 'unknown':
      return style.alarm;
    case 'running':
    case 'awaiting':
      return style.warn;
    default:
      return style.faint;
  }
}

/**
 * Each node's depth: 1 for a node that depends on nothing, else one more than its deepest dependency. A
 * dependency the plan lacks (it was validated, so only a stored plan of an older version could) counts as 0.
 */
export function planDepths(plan: PlanView): Map<string, number> {
  const byId = new Map(plan.nodes.map((node) => [node.id, node]));
  const depths = new Map<string, number>();
  const depth = (id: string, seen: Set<string>): number => {
    const known = depths.get(id);
    if (known !== undefined) return known;
    const node = byId.get(id);
    if (node === undefined || seen.has(id)) return 0;
    seen.add(id);
    const value = 1 + Math.max(0, ...node.dependsOn.map((dependency) => depth(dependency, seen)));
    depths.set(id, value);
    return value;
  };
  for (const node of plan.nodes) depth(node.id, new Set());
  return depths;
}

/** The plan's lines: a heading, then one row a node, by depth then plan order. */
export function renderPlan(plan: PlanView, style: Style): string {
  const depths = planDepths(plan);
  const nodes = [...plan.nodes].sort((a, b) => depths.get(a.id)! - depths.get(b.id)!);
  const rows = nodes.map((node) => {
    const paint = nodePaint(node.state, style);
    const notes: string[] = [];
    if (node.dependsOn.length > 0) notes.push(`after ${node.dependsOn.join(', ')}`);
    if (node.code !== undefined) notes.push(style.bad(node.code));
    if (node.childRunId !== undefined) notes.push(`child run ${node.childRunId}`);
    return [
      `${'  '.repeat(depths.get(node.id)! - 1)}${paint(marks[node.state])} ${node.id}`,
      node.capability,
      paint(node.state === 'unknown' ? 'OUTCOME UNKNOWN' : node.state),
      notes.join('; '),
    ];
  });
  const heading = `${style.strong('plan')} revision ${plan.revision}, ${plan.phase}, ${plan.nodes.length} node${plan.nodes.length === 1 ? '' : 's'}`;
  return [
    heading,
    indent(renderTable(['NODE', 'CAPABILITY', 'STATE', ''].map(style.faint), rows), 2),
  ].join('\n');
}

/** Every line of `text` moved right by `by` spaces. */
export function indent(text: string, by: number): string {
  const pad = ' '.repeat(by);
  return text
    .split('\n')
    .map((line) => (line === '' ? line : pad + line))
    .join('\n');
}
