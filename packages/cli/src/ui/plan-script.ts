/**
 * The plan DAG of a planner run, plain browser JavaScript: one column per layer (the server's `PlanView`
 * computed the layers), a box per node with its state, and an SVG line from each dependency to its dependent,
 * drawn once the boxes are laid out (and again when the window is resized), since only then are their places
 * known.
 */
export const planScript = String.raw`
function renderPlan(plan) {
  var root = el('div', {});
  var facts = 'phase ' + plan.phase + (plan.revision !== null ? ', plan revision ' + plan.revision : '') +
    (plan.replans ? ', ' + plan.replans + ' replan' + (plan.replans === 1 ? '' : 's') : '');
  append(root, el('p', { class: 'muted', text: facts }));
  if (plan.nodes.length === 0) {
    append(root, el('p', { class: 'muted', text: 'No plan yet: the planning model has not answered.' }));
    return root;
  }
  var layers = [];
  plan.nodes.forEach(function (node) {
    (layers[node.layer] = layers[node.layer] || []).push(node);
  });
  var dag = el('div', { class: 'dag' });
  var boxes = {};
  layers.forEach(function (nodes, layer) {
    var column = el('div', { class: 'layer', 'data-layer': layer });
    (nodes || []).forEach(function (node) {
      var box = el('div', { class: 'node', 'data-node': node.id, 'data-state': node.state }, [
        el('div', { class: 'id', text: node.id }),
        el('div', { class: 'muted', text: node.capability }),
        el('div', {}, [badge(node.state), node.code ? el('span', { class: 'mono', text: ' ' + node.code }) : null]),
        node.childRunId ? el('div', {}, ['child ', runLink(node.childRunId, 'run')]) : null,
      ]);
      boxes[node.id] = box;
      append(column, box);
    });
    append(dag, column);
  });
  append(root, dag);
  function draw() { drawEdges(dag, plan.nodes, boxes); }
  // Drawn after the browser has laid the boxes out.
  requestAnimationFrame(draw);
  window.addEventListener('resize', draw);
  root.dispose = function () { window.removeEventListener('resize', draw); };
  return root;
}

function drawEdges(dag, nodes, boxes) {
  var ns = 'http://www.w3.org/2000/svg';
  var old = dag.querySelector('svg');
  if (old) dag.removeChild(old);
  var svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('width', String(dag.scrollWidth));
  svg.setAttribute('height', String(dag.scrollHeight));
  var origin = dag.getBoundingClientRect();
  nodes.forEach(function (node) {
    var to = boxes[node.id];
    node.dependsOn.forEach(function (dependency) {
      var from = boxes[dependency];
      if (!from || !to) return;
      var a = from.getBoundingClientRect();
      var b = to.getBoundingClientRect();
      var x1 = a.right - origin.left + dag.scrollLeft;
      var y1 = a.top + a.height / 2 - origin.top;
      var x2 = b.left - origin.left + dag.scrollLeft;
      var y2 = b.top + b.height / 2 - origin.top;
      var path = document.createElementNS(ns, 'path');
      var bend = Math.max(20, (x2 - x1) / 2);
      path.setAttribute('d', 'M' + x1 + ',' + y1 + ' C' + (x1 + bend) + ',' + y1 + ' ' + (x2 - bend) + ',' + y2 +
        ' ' + x2 + ',' + y2);
      path.setAttribute('fill', 'none');
      path.setAttribute('stroke', '#8a96a6');
      path.setAttribute('stroke-width', '1.5');
      path.setAttribute('data-edge', dependency + '->' + node.id);
      svg.appendChild(path);
    });
  });
  dag.insertBefore(svg, dag.firstChild);
}
`;
