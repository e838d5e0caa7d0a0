/**
 * Positions for the visible graph, computed with dagre (layered layout for directed graphs).
 *
 * Each expanded scope is laid out on its own, as a flat graph of its direct children (ops,
 * collapsed scopes, and expanded child scopes as boxes of their own laid-out size), and the
 * result is cached. An edge is drawn at the level where its two ends part: between the two
 * children of the innermost scope holding both. So expanding a scope lays out that scope and
 * re-packs its ancestors, each at most `MAX_CHILDREN` boxes -- the cost follows what a person
 * opened, never the size of the graph. (dagre's own compound-graph mode takes seconds for a
 * hundred boxes, which is why nesting is done here.)
 */

import { graphlib, layout as dagreLayout } from '@dagrejs/dagre';

import { BoxLines, opLines, opShortNames, scopeLines } from './labels';
import type { Report } from './schema';
import { ScopeNode, ScopeTree, VisibleNode, ancestors, opKey } from './scopes';

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface PlacedNode {
  node: VisibleNode;
  box: Box;
}

export interface PlacedEdge {
  source: string;
  target: string;
  /** How many op-level edges this drawn edge stands for. */
  count: number;
  points: { x: number; y: number }[];
}

export interface GraphLayout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  width: number;
  height: number;
}

const CHAR_WIDTH = 6.6;
const MAX_LABEL_CHARS = 28;
/** Height of an op box with two lines of text, and how much a third line (dtype change) adds. */
export const NODE_HEIGHT = 34;
export const LINE_HEIGHT = 13;
const SCOPE_HEIGHT = 44;

/**
 * What a box's first line reads. A long name keeps its start (the layer a person wrote) and its
 * end (the op): the middle is elided, never the front, so "sequential/conv2d/…/Conv2D" stays
 * recognisable.
 */
export function shortLabel(text: string, max = MAX_LABEL_CHARS): string {
  if (text.length <= max) {
    return text;
  }
  const tail = Math.ceil((max - 1) * 0.6);
  const head = max - 1 - tail;
  return `${text.slice(0, head)}\u2026${text.slice(text.length - tail)}`;
}

/** The label of an expanded scope's frame: "▾ name (N)". Frames are at least this wide (see below). */
export function frameLabel(scope: ScopeNode, name: string): string {
  return `\u25be ${shortLabel(name, 60)} (${scope.total})`;
}

function frameLabelWidth(scope: ScopeNode): number {
  return Math.ceil(frameLabel(scope, scopeLines(scope).name).length * CHAR_WIDTH) + 16;
}

/** The text lines of a visible box (op or collapsed scope / frame). */
export function nodeLines(cache: LayoutCache, node: VisibleNode): BoxLines {
  return node.kind === 'op' ? opLines(cache.report, cache.shortNames, node.op) : scopeLines(node.scope);
}

function nodeSize(cache: LayoutCache, node: VisibleNode): { width: number; height: number } {
  const lines = nodeLines(cache, node);
  const chars = Math.max(
    shortLabel(lines.name).length + (node.kind === 'scope' ? 2 : 0),
    shortLabel(lines.kind).length,
    lines.change.length
  );
  return {
    width: Math.max(70, Math.ceil(chars * CHAR_WIDTH) + 16),
    height: node.kind === 'scope' ? SCOPE_HEIGHT : NODE_HEIGHT + (lines.change ? LINE_HEIGHT : 0)
  };
}

/**
 * The zoom at which a drawing fits a view in both directions: never above 1 (text would only
 * grow), never below `min` (text would be unreadable; the view scrolls instead).
 */
export function fitZoom(drawing: { width: number; height: number }, view: { width: number; height: number }, min = MIN_READABLE_ZOOM): number {
  const pad = 8;
  const zx = (view.width - pad) / Math.max(1, drawing.width);
  const zy = (view.height - pad) / Math.max(1, drawing.height);
  return Math.max(min, Math.min(1, zx, zy));
}

/** Below this scale the 11-12 px box labels are unreadable: "fit" stops here and the view scrolls. */
export const MIN_READABLE_ZOOM = 0.5;

const FRAME_HEADER = 24;
const FRAME_PAD = 10;

/** One scope's interior, in coordinates relative to the interior's top-left corner. */
interface Interior {
  signature: string;
  width: number;
  height: number;
  items: { key: string; kind: 'op' | 'scope' | 'cluster'; op: number; scope: ScopeNode | null; box: Box; inner: Interior | null }[];
  edges: PlacedEdge[];
}

/** Per-tree facts and caches the nested layout reuses across redraws. */
export class LayoutCache {
  private readonly chains: ScopeNode[][];
  private readonly subtreeOps = new Map<ScopeNode, number[]>();
  readonly interiors = new Map<ScopeNode, Interior>();
  /** Each op's first line, disambiguated among the ops drawn beside it. */
  readonly shortNames: string[];

  constructor(
    readonly report: Report,
    readonly tree: ScopeTree
  ) {
    this.chains = report.ops.map((_, k) => ancestors(tree, k));
    this.shortNames = opShortNames(report, tree);
  }

  /** Key of the box that stands for `op` among the children of `scope`. */
  unitAt(op: number, scope: ScopeNode): string {
    const inner = this.chains[op][scope.depth];
    return inner ? inner.id : opKey(op);
  }

  contains(scope: ScopeNode, op: number): boolean {
    return scope.depth === 0 || this.chains[op][scope.depth - 1] === scope;
  }

  opsUnder(scope: ScopeNode): number[] {
    let ops = this.subtreeOps.get(scope);
    if (!ops) {
      ops = [];
      for (const child of scope.children) {
        if (child.kind === 'op') {
          ops.push(child.op);
        } else {
          ops.push(...this.opsUnder(child.scope));
        }
      }
      this.subtreeOps.set(scope, ops);
    }
    return ops;
  }
}

/** Which expanded scopes lie under `scope`: the interior must be redone when this changes. */
function signature(scope: ScopeNode, expanded: ReadonlySet<string>): string {
  let sig = '';
  for (const child of scope.children) {
    if (child.kind === 'scope' && expanded.has(child.scope.id)) {
      sig += `${child.scope.id}(${signature(child.scope, expanded)})`;
    }
  }
  return sig;
}

/** Edges among the children of `scope`, merged per pair of child boxes. */
function childEdges(cache: LayoutCache, scope: ScopeNode): Map<string, { source: string; target: string; count: number }> {
  const ops = cache.report.ops;
  const merged = new Map<string, { source: string; target: string; count: number }>();
  for (const k of cache.opsUnder(scope)) {
    const target = cache.unitAt(k, scope);
    for (const j of ops[k].i) {
      if (!cache.contains(scope, j)) {
        continue;
      }
      const source = cache.unitAt(j, scope);
      if (source === target) {
        continue;
      }
      const id = `${source}\u0000${target}`;
      const edge = merged.get(id);
      if (edge) {
        edge.count += 1;
      } else {
        merged.set(id, { source, target, count: 1 });
      }
    }
  }
  return merged;
}

function layoutInterior(cache: LayoutCache, scope: ScopeNode, expanded: ReadonlySet<string>): Interior {
  const sig = signature(scope, expanded);
  const cached = cache.interiors.get(scope);
  if (cached && cached.signature === sig) {
    return cached;
  }
  const items: Interior['items'] = scope.children.map(child => {
    if (child.kind === 'op') {
      const node: VisibleNode = { key: opKey(child.op), kind: 'op', op: child.op, parent: null };
      return { key: node.key, kind: 'op' as const, op: child.op, scope: null, box: { x: 0, y: 0, ...nodeSize(cache, node) }, inner: null };
    }
    if (expanded.has(child.scope.id)) {
      const inner = layoutInterior(cache, child.scope, expanded);
      // A frame is as wide as its label, so the label never runs over a neighbouring box.
      const width = Math.max(inner.width + 2 * FRAME_PAD, frameLabelWidth(child.scope));
      const box = { x: 0, y: 0, width, height: inner.height + FRAME_HEADER + FRAME_PAD };
      return { key: child.scope.id, kind: 'cluster' as const, op: -1, scope: child.scope, box, inner };
    }
    const node: VisibleNode = { key: child.scope.id, kind: 'scope', scope: child.scope, parent: null };
    return { key: node.key, kind: 'scope' as const, op: -1, scope: child.scope, box: { x: 0, y: 0, ...nodeSize(cache, node) }, inner: null };
  });
  const g = new graphlib.Graph({ multigraph: false });
  g.setGraph({ rankdir: 'TB', nodesep: 18, ranksep: 34, edgesep: 8, marginx: 0, marginy: 0 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const item of items) {
    g.setNode(item.key, { width: item.box.width, height: item.box.height });
  }
  const merged = childEdges(cache, scope);
  for (const e of merged.values()) {
    g.setEdge(e.source, e.target, { weight: e.count });
  }
  dagreLayout(g);
  let width = 0;
  let height = 0;
  for (const item of items) {
    const n = g.node(item.key);
    item.box.x = n.x - n.width / 2;
    item.box.y = n.y - n.height / 2;
    width = Math.max(width, item.box.x + item.box.width);
    height = Math.max(height, item.box.y + item.box.height);
  }
  const edges = [...merged.values()].map(e => ({
    ...e,
    points: (g.edge(e.source, e.target).points ?? []).map(p => ({ x: p.x, y: p.y }))
  }));
  // Edges may bend outside the boxes' extent; the drawing must hold them too, or they are cut off.
  for (const e of edges) {
    for (const p of e.points) {
      width = Math.max(width, p.x + 2);
      height = Math.max(height, p.y + 2);
    }
  }
  const interior: Interior = { signature: sig, width, height, items, edges };
  cache.interiors.set(scope, interior);
  return interior;
}

const MARGIN = 12;

/** Lay out the visible graph top to bottom (data flows down), frames around expanded scopes. */
export function layoutGraph(cache: LayoutCache, expanded: ReadonlySet<string>): GraphLayout {
  const root = layoutInterior(cache, cache.tree.root, expanded);
  const nodes: PlacedNode[] = [];
  const edges: PlacedEdge[] = [];
  const place = (interior: Interior, dx: number, dy: number, parent: string | null): void => {
    for (const e of interior.edges) {
      edges.push({ ...e, points: e.points.map(p => ({ x: p.x + dx, y: p.y + dy })) });
    }
    for (const item of interior.items) {
      const box = { ...item.box, x: item.box.x + dx, y: item.box.y + dy };
      const node: VisibleNode =
        item.kind === 'op'
          ? { key: item.key, kind: 'op', op: item.op, parent }
          : { key: item.key, kind: item.kind, scope: item.scope!, parent };
      nodes.push({ node, box });
      if (item.inner) {
        const spare = box.width - 2 * FRAME_PAD - item.inner.width;
        place(item.inner, box.x + FRAME_PAD + spare / 2, box.y + FRAME_HEADER, item.key);
      }
    }
  };
  place(root, MARGIN, MARGIN, null);
  return { nodes, edges, width: root.width + 2 * MARGIN, height: root.height + 2 * MARGIN };
}
