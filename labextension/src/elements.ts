/**
 * The only way this extension creates DOM: elements with allow-listed attributes and text.
 *
 * Everything a report holds (op names, types, reasons, paths) is user data. Funnelling element
 * creation through these two functions means data can only ever land in a text node or in an
 * attribute that browsers never interpret as code; there is no `innerHTML` anywhere.
 */

const HTML_NS = 'http://www.w3.org/1999/xhtml';
const SVG_NS = 'http://www.w3.org/2000/svg';

/** Attributes that never execute or load anything, whatever their value. */
const SAFE_ATTRIBUTES = new Set([
  'class',
  'role',
  'type',
  'placeholder',
  'title',
  'value',
  'tabindex',
  'colspan',
  'aria-label',
  'aria-sort',
  'aria-pressed',
  'aria-selected',
  'aria-expanded',
  'aria-live',
  'data-key',
  'data-op',
  'data-fact',
  'data-lead',
  'data-render-ms',
  'id',
  'x',
  'y',
  'x1',
  'x2',
  'y1',
  'y2',
  'width',
  'height',
  'rx',
  'ry',
  'd',
  'transform',
  'viewBox',
  'markerWidth',
  'markerHeight',
  'refX',
  'refY',
  'orient',
  'marker-end',
  'stroke-width',
  'text-anchor',
  'dominant-baseline'
]);

export type Attrs = Record<string, string | number | undefined>;
export type Content = Node | string | null | undefined | false;

function build<E extends Element>(el: E, attrs: Attrs, children: Content[]): E {
  for (const [name, value] of Object.entries(attrs)) {
    if (!SAFE_ATTRIBUTES.has(name)) {
      // A programming error, not a data error: refuse rather than widen what data can reach.
      throw new Error(`npu-jupyter: attribute "${name}" is not on the safe list`);
    }
    if (value !== undefined) {
      el.setAttribute(name, String(value));
    }
  }
  append(el, ...children);
  return el;
}

/** Append children; strings become text nodes, never markup. */
export function append(parent: Node, ...children: Content[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    parent.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  }
}

/** An HTML element with safe attributes and text/element children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Content[]
): HTMLElementTagNameMap[K] {
  return build(document.createElementNS(HTML_NS, tag) as HTMLElementTagNameMap[K], attrs, children);
}

/** An SVG element with safe attributes and text/element children. */
export function s<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Content[]
): SVGElementTagNameMap[K] {
  return build(document.createElementNS(SVG_NS, tag) as SVGElementTagNameMap[K], attrs, children);
}

/** Remove all children (cheaper and clearer than assigning markup). */
export function clear(el: Element): void {
  while (el.firstChild) {
    el.removeChild(el.firstChild);
  }
}

/**
 * Relative and not leaving the notebook's folder, with no scheme: a path JupyterLab can open, and
 * one that can never be a `javascript:` or remote URL (as _display/html.py's `is_openable`).
 */
export function isOpenable(path: string): boolean {
  return path !== '' && !/^([/\\~]|\.\.)/.test(path) && !path.includes(':');
}

/**
 * A link to a file a run wrote inside the notebook's folder. The one place an `href` is set, and
 * only from a path `isOpenable` accepts (percent-encoded), so data cannot make it run or load.
 */
export function fileLink(path: string, attrs: Attrs, ...children: Content[]): HTMLAnchorElement {
  if (!isOpenable(path)) {
    throw new Error('npu-jupyter: only relative paths inside the notebook folder become links');
  }
  const anchor = h('a', attrs, ...children);
  anchor.setAttribute('href', encodeURI(path));
  return anchor;
}
