/**
 * Name-scope tree of a report's ops, and the graph a person sees with some scopes collapsed.
 *
 * A training graph has thousands of ops (ResNet-50 with its gradients and optimizer: ~7k), far
 * more than a layout library can place interactively or a person can read. TensorFlow op names
 * are already a hierarchy (`gradients/resnet50/conv1/Conv2D_grad/Conv2DBackpropInput`), so the
 * graph view shows a scope as one box until it is expanded. This module is pure data: the tree,
 * which box each op is folded into, and the aggregated edges between visible boxes.
 */

import { changedPrecision } from './optext';
import type { Engine, Report } from './schema';

/** More direct children than this and a scope's children are split into numbered chunks. */
export const MAX_CHILDREN = 60;

export interface ScopeNode {
  /** Unique id: "s:" + path for real scopes, "s:" + path + "#k" for chunks; "" is the root. */
  id: string;
  /** Full scope path, e.g. "gradients/resnet50"; "" for the root. */
  path: string;
  /** What the box shows: the path relative to the parent, or "ops 61-120" for a chunk. */
  label: string;
  parent: ScopeNode | null;
  /** Child scopes and ops in order of their first op (topological order). */
  children: Child[];
  /** Ops in the whole subtree. */
  total: number;
  engines: Record<Engine, number>;
  /** Ops in the subtree whose dtype after differs from before. */
  changed: number;
  /** Smallest op index in the subtree; orders siblings. */
  first: number;
  chunk: boolean;
  /** 0 for the root, 1 for its child scopes, ... (chunks count as a level). */
  depth: number;
}

export type Child = { kind: 'scope'; scope: ScopeNode } | { kind: 'op'; op: number };

export interface ScopeTree {
  root: ScopeNode;
  byId: Map<string, ScopeNode>;
  /** For each op index, the innermost scope (or chunk) holding it. */
  parentOf: ScopeNode[];
}

function newScope(path: string, label: string, parent: ScopeNode | null, chunk = false): ScopeNode {
  return {
    id: path === '' && !chunk ? '' : `s:${path}`,
    path,
    label,
    parent,
    children: [],
    total: 0,
    engines: { AI_CORE: 0, AI_CPU: 0, HOST: 0 },
    changed: 0,
    first: Number.POSITIVE_INFINITY,
    chunk,
    depth: 0
  };
}

function childFirst(c: Child): number {
  return c.kind === 'op' ? c.op : c.scope.first;
}

/**
 * Merge a scope that holds nothing but one child scope into that child ("a" -> "a/b"), so a
 * deep single-path prefix costs one click, not one per level; a scope holding a single op is
 * replaced by the op itself.
 */
function compressChains(node: ScopeNode): void {
  node.children = node.children.map(child => {
    if (child.kind !== 'scope') {
      return child;
    }
    let s = child.scope;
    while (s.children.length === 1 && s.children[0].kind === 'scope') {
      const inner = s.children[0].scope;
      inner.label = `${s.label}/${inner.label}`;
      inner.parent = node;
      s = inner;
    }
    if (s.children.length === 1) {
      return s.children[0];
    }
    compressChains(s);
    return { kind: 'scope', scope: s };
  });
}

/** Split a scope with too many children into chunks (recursively), keeping their order. */
function chunkWide(node: ScopeNode): void {
  for (const child of node.children) {
    if (child.kind === 'scope') {
      chunkWide(child.scope);
    }
  }
  let level = 0;
  while (node.children.length > MAX_CHILDREN) {
    const groups: Child[] = [];
    for (let k = 0; k < node.children.length; k += MAX_CHILDREN) {
      const members = node.children.slice(k, k + MAX_CHILDREN);
      const chunkPath = `${node.path}#${level}.${k / MAX_CHILDREN}`;
      const chunk = newScope(chunkPath, '', node, true);
      chunk.children = members;
      for (const m of members) {
        if (m.kind === 'scope') {
          m.scope.parent = chunk;
        }
      }
      groups.push({ kind: 'scope', scope: chunk });
    }
    node.children = groups;
    level += 1;
  }
}

function addCounts(into: ScopeNode, from: ScopeNode): void {
  into.total += from.total;
  into.changed += from.changed;
  into.first = Math.min(into.first, from.first);
  for (const e of Object.keys(from.engines) as Engine[]) {
    into.engines[e] += from.engines[e];
  }
}

/** Recompute counts bottom-up (after chunking moved children around) and name the chunks. */
function finish(node: ScopeNode, report: Report, byId: Map<string, ScopeNode>, parentOf: ScopeNode[]): void {
  node.depth = node.parent ? node.parent.depth + 1 : 0;
  node.total = 0;
  node.changed = 0;
  node.first = Number.POSITIVE_INFINITY;
  node.engines = { AI_CORE: 0, AI_CPU: 0, HOST: 0 };
  for (const child of node.children) {
    if (child.kind === 'op') {
      const op = report.ops[child.op];
      node.total += 1;
      node.engines[op.e] += 1;
      node.changed += changedPrecision(op) ? 1 : 0;
      node.first = Math.min(node.first, child.op);
      parentOf[child.op] = node;
    } else {
      finish(child.scope, report, byId, parentOf);
      addCounts(node, child.scope);
    }
  }
  if (node.chunk) {
    node.label = `${node.total} ops from #${node.first}`;
  }
  if (node.id !== '') {
    byId.set(node.id, node);
  }
}

/** Build the scope tree of a report's ops. Ops are leaves under the scope their name's prefix names. */
export function buildScopeTree(report: Report): ScopeTree {
  const root = newScope('', '', null);
  const scopes = new Map<string, ScopeNode>([['', root]]);
  const scopeFor = (path: string): ScopeNode => {
    const known = scopes.get(path);
    if (known) {
      return known;
    }
    const cut = path.lastIndexOf('/');
    const parent = scopeFor(cut < 0 ? '' : path.slice(0, cut));
    const node = newScope(path, cut < 0 ? path : path.slice(cut + 1), parent);
    parent.children.push({ kind: 'scope', scope: node });
    scopes.set(path, node);
    return node;
  };
  report.ops.forEach((op, k) => {
    const cut = op.n.lastIndexOf('/');
    const parent = scopeFor(cut <= 0 ? '' : op.n.slice(0, cut));
    parent.children.push({ kind: 'op', op: k });
    for (let s: ScopeNode | null = parent; s; s = s.parent) {
      s.first = Math.min(s.first, k);
    }
  });
  const sortChildren = (node: ScopeNode): void => {
    node.children.sort((a, b) => childFirst(a) - childFirst(b));
    node.children.forEach(c => c.kind === 'scope' && sortChildren(c.scope));
  };
  sortChildren(root);
  compressChains(root);
  chunkWide(root);
  const byId = new Map<string, ScopeNode>();
  const parentOf: ScopeNode[] = new Array(report.ops.length);
  finish(root, report, byId, parentOf);
  return { root, byId, parentOf };
}

/** The scopes holding an op, outermost first (the root excluded). */
export function ancestors(tree: ScopeTree, op: number): ScopeNode[] {
  const chain: ScopeNode[] = [];
  for (let s: ScopeNode | null = tree.parentOf[op]; s && s !== tree.root; s = s.parent) {
    chain.push(s);
  }
  return chain.reverse();
}

export type VisibleNode =
  | { key: string; kind: 'op'; op: number; parent: string | null }
  | { key: string; kind: 'scope'; scope: ScopeNode; parent: string | null }
  | { key: string; kind: 'cluster'; scope: ScopeNode; parent: string | null };

export interface VisibleGraph {
  nodes: VisibleNode[];
  /** For each op, the key of the visible node it is drawn as (itself or a collapsed scope). */
  unitOf: string[];
}

export function opKey(op: number): string {
  return `o:${op}`;
}

/**
 * The boxes drawn for a set of expanded scopes: ops of expanded scopes are drawn one by one, a
 * collapsed scope is one box, and expanded scopes become `cluster` frames around their children.
 */
export function visibleGraph(report: Report, tree: ScopeTree, expanded: ReadonlySet<string>): VisibleGraph {
  const nodes: VisibleNode[] = [];
  const unitOf: string[] = new Array(report.ops.length);
  const walk = (scope: ScopeNode, parentKey: string | null, unit: string | null): void => {
    for (const child of scope.children) {
      if (child.kind === 'op') {
        const key = unit ?? opKey(child.op);
        unitOf[child.op] = key;
        if (unit === null) {
          nodes.push({ key, kind: 'op', op: child.op, parent: parentKey });
        }
      } else if (unit !== null) {
        walk(child.scope, parentKey, unit);
      } else if (expanded.has(child.scope.id)) {
        nodes.push({ key: child.scope.id, kind: 'cluster', scope: child.scope, parent: parentKey });
        walk(child.scope, child.scope.id, null);
      } else {
        nodes.push({ key: child.scope.id, kind: 'scope', scope: child.scope, parent: parentKey });
        walk(child.scope, parentKey, child.scope.id);
      }
    }
  };
  walk(tree.root, null, null);
  return { nodes, unitOf };
}

/**
 * Scopes to open at first: breadth-first from the top, each scope whose children still fit
 * within `budget` drawn boxes, so a small graph shows its ops and a big one shows its outline.
 */
export function initialExpansion(tree: ScopeTree, budget = 40): Set<string> {
  const expanded = new Set<string>();
  let visible = tree.root.children.length;
  let frontier = tree.root.children.filter(c => c.kind === 'scope').map(c => (c as { scope: ScopeNode }).scope);
  while (frontier.length > 0) {
    const next: ScopeNode[] = [];
    for (const scope of frontier) {
      const grows = scope.children.length;
      if (visible + grows > budget) {
        continue; // too big to open by default; a smaller sibling may still fit
      }
      expanded.add(scope.id);
      visible += grows;
      for (const c of scope.children) {
        if (c.kind === 'scope') {
          next.push(c.scope);
        }
      }
    }
    frontier = next;
  }
  return expanded;
}
