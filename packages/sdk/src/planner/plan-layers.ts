/**
 * Each node's layer: the length of the longest dependency chain under it. A dependency the plan lacks (a
 * completed node of an earlier plan) is left out, and a cycle (which a validated plan never has, but a stored
 * state parsed as it is may) is cut where it closes, so every plan gets a layout.
 */
export function planLayers(
  nodes: readonly { id: string; dependsOn: readonly string[] }[],
): Map<string, number> {
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const layers = new Map<string, number>();
  const visiting = new Set<string>();
  // Iterative depth-first walk: a plan may be thousands of nodes deep, more than the call stack allows.
  for (const root of nodes) {
    const stack: { id: string; next: number }[] = [{ id: root.id, next: 0 }];
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      if (layers.has(top.id)) {
        stack.pop();
        continue;
      }
      visiting.add(top.id);
      const dependencies = byId.get(top.id)?.dependsOn ?? [];
      const dependency = dependencies[top.next];
      if (dependency !== undefined) {
        top.next += 1;
        if (byId.has(dependency) && !layers.has(dependency) && !visiting.has(dependency)) {
          stack.push({ id: dependency, next: 0 });
        }
        continue;
      }
      let layer = 0;
      for (const id of dependencies) layer = Math.max(layer, (layers.get(id) ?? -1) + 1);
      layers.set(top.id, layer);
      visiting.delete(top.id);
      stack.pop();
    }
  }
  return layers;
}
