/**
 * The graph view: an SVG drawing of the visible graph (scopes collapsed or expanded), coloured by
 * placement or by precision. SVG is built element by element through `elements.ts`; op names
 * only ever become text nodes.
 */

import { clear, h, s } from './elements';
import { GraphLayout, LayoutCache, LINE_HEIGHT, PlacedNode, fitZoom, frameLabel, layoutGraph, nodeLines, shortLabel } from './layout';
import { ENGINE_LABELS, engineClass, opClasses } from './palette';
import { attentionOps, centredOn, firstScale, leadOp, READABLE_ZOOM, scrollsSideways } from './firstview';
import { overflowOps } from './lead';
import type { Report } from './schema';
import { ScopeNode, ScopeTree, VisibleGraph, ancestors, initialExpansion, visibleGraph } from './scopes';

let markerCounter = 0;

const ENGINE_ORDER = ['AI_CORE', 'AI_CPU', 'HOST'] as const;

/** The most boxes the first view may draw to show the ops that need attention as ops. */
const FIRST_VIEW_BOXES = 120;

/**
 * Open the scopes around the ops that need attention (`attentionOps`) so the first view draws
 * them as ops, as long as the drawing stays small; otherwise scopes stay collapsed.
 */
export function openToHostOps(report: Report, tree: ScopeTree, expanded: Set<string>): Set<string> {
  for (const op of attentionOps(report)) {
    const closed = ancestors(tree, op).filter(scope => !expanded.has(scope.id));
    if (closed.length === 0) {
      continue;
    }
    const trial = new Set([...expanded, ...closed.map(scope => scope.id)]);
    if (visibleGraph(report, tree, trial).nodes.length <= FIRST_VIEW_BOXES) {
      closed.forEach(scope => expanded.add(scope.id));
    }
  }
  return expanded;
}

/**
 * The scopes open in the first view. With ops that need attention, only the scopes around them:
 * a Keras step's optimizer and metric scopes stay one box each instead of widening the drawing
 * until, fitted to the cell, nothing is readable. Without, the outline (`initialExpansion`).
 */
export function firstExpansion(report: Report, tree: ScopeTree): Set<string> {
  if (attentionOps(report).length === 0) {
    return initialExpansion(tree);
  }
  return openToHostOps(report, tree, new Set());
}

export class GraphView {
  /** Scroll container holding the SVG. */
  readonly node: HTMLElement;
  /** A line for the toolbar, shown while the first view shows part of a wide drawing (see `partial`). */
  readonly note: HTMLElement;
  /** Milliseconds the last visible-graph computation + layout + drawing took. */
  lastLayoutMs = 0;
  private expanded: Set<string>;
  private visible!: VisibleGraph;
  private placed!: GraphLayout;
  private zoom = 1;
  /**
   * A new view fits its drawing to the cell width (never wider than natural size, never narrower
   * than the readable scale: see firstview.ts; a wider drawing scrolls); zooming or "fit" switch to
   * an explicit scale.
   */
  private fitWidth = true;
  private selected: number | null = null;
  private readonly groups = new Map<string, SVGGElement>();
  private readonly markerId: string;
  private readonly cache: LayoutCache;

  constructor(
    private readonly report: Report,
    private readonly tree: ScopeTree,
    private readonly onSelectOp: (op: number) => void
  ) {
    this.markerId = `npu-arrow-${++markerCounter}`;
    this.cache = new LayoutCache(report, tree);
    this.expanded = firstExpansion(report, tree);
    this.node = h('div', { class: 'npu-graph', tabindex: 0, role: 'group', 'aria-label': 'op graph' });
    this.note = h('span', { class: 'npu-graph-note' });
    this.note.hidden = true;
    this.node.addEventListener('click', event => this.onClick(event));
    this.node.addEventListener('keydown', event => {
      if (event.key === 'Enter' || event.key === ' ') {
        this.onClick(event);
      }
    });
    this.redraw();
  }

  /** How many boxes are drawn now (ops + collapsed scopes + expanded frames). */
  get drawnCount(): number {
    return this.placed.nodes.length;
  }

  isExpanded(scopeId: string): boolean {
    return this.expanded.has(scopeId);
  }

  /** Expand or collapse a scope and lay the graph out again. */
  toggle(scopeId: string): void {
    if (this.expanded.has(scopeId)) {
      this.expanded.delete(scopeId);
      for (const id of [...this.expanded]) {
        if (id.startsWith(`${scopeId}/`) || id.startsWith(`${scopeId}#`)) {
          this.expanded.delete(id);
        }
      }
    } else {
      this.expanded.add(scopeId);
    }
    this.redraw();
  }

  collapseAll(): void {
    this.expanded.clear();
    this.redraw();
  }

  setZoom(zoom: number): void {
    this.fitWidth = false;
    this.zoom = Math.min(3, Math.max(0.1, zoom));
    this.applyZoom();
  }

  /** The scale the drawing is shown at (while fitted to the width: its share of the natural size, within the readable floor). */
  get zoomLevel(): number {
    return this.fitWidth ? firstScale(this.placed.width, this.node.clientWidth) : this.zoom;
  }

  /** Whether the first view shows part of a drawing wider than the cell (at the readable scale). */
  get partial(): boolean {
    return this.fitWidth && scrollsSideways(this.placed.width, this.node.clientWidth);
  }

  /** Whether the drawing follows the cell width (the first view) rather than an explicit zoom. */
  get fittedToWidth(): boolean {
    return this.fitWidth;
  }

  /**
   * Zoom so the whole drawing fits the view, width and height. The view grows with its content up
   * to a maximum height (or the height the user dragged it to), so fit against that height.
   */
  fit(): void {
    const width = this.node.clientWidth || 800;
    const style = typeof getComputedStyle === 'function' ? getComputedStyle(this.node) : null;
    const dragged = this.node.style.height !== '';
    const max = parseFloat(style?.maxHeight ?? '');
    const height = dragged || !(max > 0) ? this.node.clientHeight || 600 : max;
    this.setZoom(fitZoom(this.placed, { width, height }));
  }

  /** Open every scope around an op, highlight it and scroll it into view. */
  reveal(op: number): void {
    const closed = ancestors(this.tree, op).filter(scope => !this.expanded.has(scope.id));
    if (closed.length > 0) {
      closed.forEach(scope => this.expanded.add(scope.id));
      this.redraw();
    }
    this.highlight(op);
    this.scrollToOp(op);
  }

  /** Scroll the view so the box drawing an op (itself, or the collapsed scope holding it) is in its middle. */
  scrollToOp(op: number): void {
    const unit = this.visible.unitOf[op];
    const placed = this.placed.nodes.find(p => p.node.key === unit);
    if (placed && this.groups.get(unit)) {
      const view = { width: this.node.clientWidth, height: this.node.clientHeight };
      const { left, top } = centredOn(placed.box, this.zoomLevel, view);
      this.node.scrollLeft = left;
      this.node.scrollTop = top;
    }
  }

  /**
   * Once the view is on the page (it has a width), open it where attention belongs: the first
   * overflow in any graph; in a drawing wider than the cell (shown at the readable scale, so it
   * scrolls) the lead op. A drawing that fits keeps the top-left view it always had.
   */
  settleWhenShown(): void {
    if (this.node.clientWidth > 0 || typeof ResizeObserver !== 'function') {
      this.settleFirstView();
      return;
    }
    // Not laid out yet (a hidden tab, a cell not yet on screen): settle on the first real size.
    const observer = new ResizeObserver(() => {
      if (this.node.clientWidth > 0) {
        observer.disconnect();
        this.settleFirstView();
      }
    });
    observer.observe(this.node);
  }

  /** What `settleWhenShown` does once the view has its width. */
  settleFirstView(): void {
    if (!this.fitWidth) {
      return; // the person already zoomed
    }
    const [overflowed] = overflowOps(this.report);
    const target = overflowed ?? (this.partial ? leadOp(this.report) : null);
    if (target !== null) {
      this.scrollToOp(target);
    }
    this.showNote();
  }

  /** Say that the view shows part of the drawing, and how to see the rest, while it does. */
  private showNote(): void {
    const partial = this.partial;
    this.note.hidden = !partial;
    this.note.textContent = partial
      ? `shown at ${Math.round(READABLE_ZOOM * 100)}% so labels stay readable: scroll for the rest, or \u201cfit\u201d`
      : '';
  }

  /** Mark the op (or the collapsed scope holding it) as selected. */
  highlight(op: number | null): void {
    this.selected = op;
    for (const g of this.groups.values()) {
      g.classList.remove('npu-selected');
    }
    if (op !== null) {
      this.groups.get(this.visible.unitOf[op])?.classList.add('npu-selected');
    }
  }

  private redraw(): void {
    const t0 = performance.now();
    this.visible = visibleGraph(this.report, this.tree, this.expanded);
    this.placed = layoutGraph(this.cache, this.expanded);
    this.draw();
    this.highlight(this.selected);
    this.lastLayoutMs = performance.now() - t0;
  }

  private applyZoom(): void {
    const svg = this.node.querySelector('svg');
    if (!svg) {
      return;
    }
    if (this.fitWidth) {
      // The viewBox keeps the aspect ratio: width follows the cell, height follows the width.
      svg.removeAttribute('width');
      svg.removeAttribute('height');
      // Never narrower than the readable scale: a wider drawing scrolls instead (firstview.ts).
      svg.style.width = '100%';
      svg.style.maxWidth = `${Math.ceil(this.placed.width)}px`;
      svg.style.minWidth = `${Math.ceil(this.placed.width * READABLE_ZOOM)}px`;
      svg.style.height = 'auto';
    } else {
      svg.style.width = svg.style.maxWidth = svg.style.minWidth = svg.style.height = '';
      svg.setAttribute('width', String(Math.ceil(this.placed.width * this.zoom)));
      svg.setAttribute('height', String(Math.ceil(this.placed.height * this.zoom)));
    }
    this.showNote();
  }

  private draw(): void {
    clear(this.node);
    this.groups.clear();
    const { width, height } = this.placed;
    const svg = s('svg', { class: 'npu-graph-svg', viewBox: `0 0 ${width} ${height}` });
    svg.append(
      s(
        'defs',
        {},
        s(
          'marker',
          { id: this.markerId, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' },
          s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'npu-arrow' })
        )
      )
    );
    const clusters = s('g', { class: 'npu-clusters' });
    const edges = s('g', { class: 'npu-edges' });
    const boxes = s('g', { class: 'npu-nodes' });
    this.placed.nodes.forEach((placed, k) => {
      const group = this.drawNode(placed, k);
      this.groups.set(placed.node.key, group);
      (placed.node.kind === 'cluster' ? clusters : boxes).append(group);
    });
    for (const edge of this.placed.edges) {
      if (edge.points.length < 2) {
        continue;
      }
      const d = edge.points.map((p, k) => `${k === 0 ? 'M' : 'L'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ');
      edges.append(
        s('path', {
          d,
          class: 'npu-edge',
          'stroke-width': (1 + Math.log2(edge.count)).toFixed(2),
          'marker-end': `url(#${this.markerId})`
        })
      );
    }
    svg.append(clusters, edges, boxes);
    this.node.append(svg);
    this.applyZoom();
  }

  private drawNode(placed: PlacedNode, k: number): SVGGElement {
    const { node, box } = placed;
    const lines = nodeLines(this.cache, node);
    const title = lines.name;
    if (node.kind === 'cluster') {
      return s(
        'g',
        { class: 'npu-cluster', 'data-key': k, role: 'button', tabindex: 0, 'aria-expanded': 'true' },
        s('title', {}, `${node.scope.path || title} \u2014 click to collapse`),
        s('rect', { x: box.x, y: box.y, width: box.width, height: box.height, rx: 6 }),
        s('text', { x: box.x + 8, y: box.y + 14, class: 'npu-cluster-label' }, frameLabel(node.scope, title))
      );
    }
    const cx = box.x + box.width / 2;
    if (node.kind === 'scope') {
      return s(
        'g',
        { class: 'npu-scope', 'data-key': k, role: 'button', tabindex: 0, 'aria-expanded': 'false' },
        s('title', {}, `${node.scope.path || title}: ${node.scope.total} ops \u2014 click to expand`),
        s('rect', { x: box.x, y: box.y, width: box.width, height: box.height, rx: 4, class: 'npu-scope-box' }),
        s('text', { x: cx, y: box.y + 14, 'text-anchor': 'middle', class: 'npu-label' }, `\u25b8 ${shortLabel(title)}`),
        s('text', { x: cx, y: box.y + 27, 'text-anchor': 'middle', class: 'npu-sublabel' }, lines.kind),
        this.mixBars(node.scope, box.x + 4, box.y + box.height - 9, box.width - 8)
      );
    }
    const op = this.report.ops[node.op];
    return s(
      'g',
      {
        class: `npu-op ${opClasses(op)}`,
        'data-key': k,
        'data-op': node.op,
        role: 'button',
        tabindex: 0,
        // The name a screen reader says; the full story (reasons) is in the tooltip and details.
        'aria-label': `${op.n} (${op.t})`
      },
      s(
        'title',
        {},
        `${op.n}\n${op.t} on ${ENGINE_LABELS[op.e]}, ${op.d0 || '-'} \u2192 ${op.d1 || '-'}\n` +
          `placement: ${this.report.reasons[op.pr]}\nprecision: ${this.report.reasons[op.xr]}`
      ),
      s('rect', { x: box.x, y: box.y, width: box.width, height: box.height, rx: 4, class: 'npu-op-box' }),
      s('text', { x: cx, y: box.y + 14, 'text-anchor': 'middle', class: 'npu-label' }, shortLabel(title)),
      s('text', { x: cx, y: box.y + 27, 'text-anchor': 'middle', class: 'npu-sublabel' }, shortLabel(lines.kind)),
      lines.change &&
        s('text', { x: cx, y: box.y + 27 + LINE_HEIGHT, 'text-anchor': 'middle', class: 'npu-sublabel npu-dtype-change' }, lines.change)
    );
  }

  /** Two thin stacked bars showing a collapsed scope's mix; CSS shows the one of the active mode. */
  private mixBars(scope: ScopeNode, x: number, y: number, width: number): SVGGElement {
    const bar = (cls: string, parts: [string, number][]): SVGGElement => {
      const g = s('g', { class: cls });
      let at = x;
      for (const [partClass, n] of parts) {
        const w = (width * n) / Math.max(1, scope.total);
        if (w > 0) {
          g.append(s('rect', { x: at, y, width: w, height: 5, class: partClass }));
          at += w;
        }
      }
      return g;
    };
    return s(
      'g',
      {},
      bar('npu-mix-placement', ENGINE_ORDER.map(e => [engineClass(e), scope.engines[e]])),
      bar('npu-mix-precision', [
        ['npu-p-changed-any', scope.changed],
        ['npu-p-kept-float', scope.total - scope.changed]
      ])
    );
  }

  private onClick(event: Event): void {
    const target = (event.target as Element | null)?.closest?.('[data-key]');
    if (!target || !this.node.contains(target)) {
      return;
    }
    const placed = this.placed.nodes[Number(target.getAttribute('data-key'))];
    if (!placed) {
      return;
    }
    event.preventDefault();
    if (placed.node.kind === 'op') {
      this.onSelectOp(placed.node.op);
    } else {
      this.toggle(placed.node.scope.id);
      this.restoreFocus(placed.node.scope.id);
    }
  }

  /** Keep keyboard focus on the scope that was toggled (its element was redrawn). */
  private restoreFocus(scopeId: string): void {
    const group = this.groups.get(scopeId);
    if (group && typeof (group as unknown as HTMLElement).focus === 'function') {
      (group as unknown as HTMLElement).focus({ preventScroll: true });
    }
  }
}
