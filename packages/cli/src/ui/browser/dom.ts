/**
 * The page's DOM helpers. Every value from the store (run ids, names, outputs, error messages, streamed text) goes
 * into the page as text nodes, never as HTML: `el` has no way to set `innerHTML`, and the only URLs it builds are
 * `#/...` links of encoded run ids.
 */

/** What `append` takes: nodes, text, and nothing (`null`, `undefined`, `false`: for conditional children). */
export type Child = Node | string | number | null | undefined | false | readonly Child[];

/**
 * Attributes of `el`: `class` sets the class, `text` the text content, anything else an attribute; `null`,
 * `undefined` and `false` leave it out.
 */
export type Attributes = Readonly<Record<string, string | number | boolean | null | undefined>>;

/** A new element with its attributes and children. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  children?: Child,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = String(value);
    else if (key === 'text') node.textContent = String(value);
    else node.setAttribute(key, String(value));
  }
  append(node, children);
  return node;
}

/** Appends children to `node`, text as text nodes. */
export function append<T extends Node>(node: T, children: Child): T {
  if (children === undefined || children === null || children === false) return node;
  if (Array.isArray(children)) {
    for (const child of children as readonly Child[]) append(node, child);
    return node;
  }
  node.appendChild(
    typeof children === 'string' || typeof children === 'number'
      ? document.createTextNode(String(children))
      : (children as Node),
  );
  return node;
}

/** Empties `node`. */
export function clear<T extends Node>(node: T): T {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

/** The page's route of a run. */
export const runHref = (runId: string): string => `#/runs/${encodeURIComponent(runId)}`;

/** A link to a run's page. */
export const runLink = (runId: string, text: string = runId): HTMLAnchorElement =>
  el('a', { href: runHref(runId), class: 'mono', text });

/** A coloured label: its class is `kind` (a status, an outcome), which the style colours. */
export const badge = (text: string, kind: string = text): HTMLSpanElement =>
  el('span', { class: `badge ${kind}`, text });
