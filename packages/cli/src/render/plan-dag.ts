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
  pending: '·',
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

/** The plan's lines: a heading, then one row a node, by depth then plan order. */
export function renderPlan(plan: PlanView, style: Style): string {
  const nodes = [...plan.nodes].sort((a, b) => a.layer - b.layer);
  const rows = nodes.map((node) => {
    const paint = nodePaint(node.state, style);
    const notes: string[] = [];
    if (node.dependsOn.length > 0) notes.push(`after ${node.dependsOn.join(', ')}`);
    if (node.code !== undefined) notes.push(style.bad(node.code));
    if (node.childRunId !== undefined) notes.push(`child run ${node.childRunId}`);
    return [
      `${'  '.repeat(node.layer)}${paint(marks[node.state])} ${node.id}`,
      node.capability,
      paint(node.state === 'unknown' ? 'OUTCOME UNKNOWN' : node.state),
      notes.join('; '),
    ];
  });
  const heading =
    plan.revision === null
      ? `${style.strong('plan')} not frozen yet, ${plan.phase}`
      : `${style.strong('plan')} revision ${plan.revision}, ${plan.phase}, ${plan.nodes.length} node${plan.nodes.length === 1 ? '' : 's'}`;
  if (plan.nodes.length === 0) return heading;
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
