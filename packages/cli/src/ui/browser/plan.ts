/**
 * The plan DAG of a planner run: one column per layer (the server's `PlanView` computed the layers), a box per node
 * with its state, and an SVG line from each dependency to its dependent, drawn once the boxes are laid out (and
 * again when the window is resized), since only then are their places known.
 */
import type { PlanNodeView, PlanView } from './api-types.js';
import { append, badge, el, runLink } from './dom.js';

/** A drawn plan, and how to stop redrawing it when the page leaves it. */
export interface RenderedPlan {
  node: HTMLElement;
  dispose(): void;
}

const svgNs = 'http://www.w3.org/2000/svg';

/** The plan's facts and its DAG. */
export function renderPlan(plan: PlanView): RenderedPlan {
  const root = el('div');
  const facts =
    `phase ${plan.phase}` +
    (plan.revision !== null ? `, plan revision ${plan.revision}` : '') +
    (plan.replans ? `, ${plan.replans} replan${plan.replans === 1 ? '' : 's'}` : '');
  append(root, el('p', { class: 'muted', text: facts }));
  if (plan.nodes.length === 0) {
    append(
      root,
      el('p', { class: 'muted', text: 'No plan yet: the planning model has not answered.' }),
    );
    return { node: root, dispose: () => undefined };
  }
  const layers: PlanNodeView[][] = [];
  for (const node of plan.nodes) (layers[node.layer] ??= []).push(node);
  const dag = el('div', { class: 'dag' });
  const boxes = new Map<string, HTMLElement>();
  // forEach passes over a layer no node is in (a hole of the sparse array): no empty column.
  layers.forEach((nodes, layer) => {
    const column = el('div', { class: 'layer', 'data-layer': layer });
    for (const node of nodes) {
      const box = el('div', { class: 'node', 'data-node': node.id, 'data-state': node.state }, [
        el('div', { class: 'id', text: node.id }),
        el('div', { class: 'muted', text: node.capability }),
        el('div', {}, [
          badge(node.state),
          node.code ? el('span', { class: 'mono', text: ` ${node.code}` }) : null,
        ]),
        node.childRunId ? el('div', {}, ['child ', runLink(node.childRunId, 'run')]) : null,
      ]);
      boxes.set(node.id, box);
      append(column, box);
    }
    append(dag, column);
  });
  append(root, dag);
  const draw = () => drawEdges(dag, plan.nodes, boxes);
  // Drawn after the browser has laid the boxes out.
  requestAnimationFrame(draw);
  window.addEventListener('resize', draw);
  return { node: root, dispose: () => window.removeEventListener('resize', draw) };
}

function drawEdges(
  dag: HTMLElement,
  nodes: readonly PlanNodeView[],
  boxes: ReadonlyMap<string, HTMLElement>,
): void {
  dag.querySelector('svg')?.remove();
  const svg = document.createElementNS(svgNs, 'svg');
  svg.setAttribute('width', String(dag.scrollWidth));
  svg.setAttribute('height', String(dag.scrollHeight));
  const origin = dag.getBoundingClientRect();
  for (const node of nodes) {
    const to = boxes.get(node.id);
    for (const dependency of node.dependsOn) {
      const from = boxes.get(dependency);
      if (from === undefined || to === undefined) continue;
      const a = from.getBoundingClientRect();
      const b = to.getBoundingClientRect();
      const x1 = a.right - origin.left + dag.scrollLeft;
      const y1 = a.top + a.height / 2 - origin.top;
      const x2 = b.left - origin.left + dag.scrollLeft;
      const y2 = b.top + b.height / 2 - origin.top;
      const bend = Math.max(20, (x2 - x1) / 2);
      const path = document.createElementNS(svgNs, 'path');
      path.setAttribute('d', `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`);
      path.setAttribute('fill', 'none');
      path.setAttribute('stroke', '#8a96a6');
      path.setAttribute('stroke-width', '1.5');
      path.setAttribute('data-edge', `${dependency}->${node.id}`);
      svg.appendChild(path);
    }
  }
  dag.insertBefore(svg, dag.firstChild);
}
