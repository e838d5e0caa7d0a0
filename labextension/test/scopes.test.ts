import { describe, expect, it } from 'vitest';

import { parseReport } from '../src/parse';
import type { Report } from '../src/schema';
import { MAX_CHILDREN, ancestors, buildScopeTree, initialExpansion, opKey, visibleGraph } from '../src/scopes';
import { OpSpec, payload, smallTraining } from './fixtures';

function report(p: Record<string, unknown>): Report {
  const r = parseReport(p);
  if (!r.ok) {
    throw new Error(r.message);
  }
  return r.report;
}

describe('buildScopeTree', () => {
  it('nests ops under the scopes their names spell', () => {
    const r = report(smallTraining());
    const tree = buildScopeTree(r);
    const top = tree.root.children.map(c => (c.kind === 'op' ? r.ops[c.op].n : c.scope.label));
    expect(top).toEqual(['input', 'model', 'loss/Mean', 'gradients/model', 'SGD/update_dense/ApplyGradientDescent', 'SGD']);
    expect(tree.byId.get('s:model')?.total).toBe(3);
  });

  it('merges a scope that only holds one scope into a single box', () => {
    const r = report(smallTraining());
    const tree = buildScopeTree(r);
    expect(tree.byId.has('s:gradients')).toBe(false);
    expect(tree.byId.get('s:gradients/model')?.label).toBe('gradients/model');
  });

  it('counts engines and precision changes of the whole subtree', () => {
    const r = report(smallTraining());
    const grads = buildScopeTree(r).byId.get('s:gradients/model')!;
    expect(grads.total).toBe(2);
    expect(grads.changed).toBe(2);
    expect(grads.engines).toEqual({ AI_CORE: 2, AI_CPU: 0, HOST: 0 });
  });

  it('splits a scope with too many children into chunks that keep every op once', () => {
    const ops: OpSpec[] = Array.from({ length: MAX_CHILDREN * 3 + 5 }, (_, k) => ({ n: `flat/op${k}` }));
    const r = report(payload(ops));
    const tree = buildScopeTree(r);
    const flat = tree.byId.get('s:flat')!;
    expect(flat.children.length).toBe(4);
    expect(flat.children.every(c => c.kind === 'scope' && c.scope.chunk)).toBe(true);
    expect(flat.total).toBe(ops.length);
    const seen = new Set<number>();
    for (const c of flat.children) {
      if (c.kind === 'scope') {
        c.scope.children.forEach(x => x.kind === 'op' && seen.add(x.op));
      }
    }
    expect(seen.size).toBe(ops.length);
    expect(ancestors(tree, 100).map(s => s.id)).toEqual(['s:flat', 's:flat#0.1']);
  });
});

describe('visibleGraph', () => {
  it('draws a collapsed scope as one box standing for its ops', () => {
    const r = report(smallTraining());
    const tree = buildScopeTree(r);
    const g = visibleGraph(r, tree, new Set());
    const keys = g.nodes.map(n => n.key);
    expect(keys).toContain('s:model');
    expect(keys).not.toContain(opKey(1));
    expect(g.unitOf[1]).toBe('s:model');
    expect(g.unitOf[0]).toBe(opKey(0));
  });

  it('draws the ops of an expanded scope inside a cluster frame', () => {
    const r = report(smallTraining());
    const tree = buildScopeTree(r);
    const g = visibleGraph(r, tree, new Set(['s:model']));
    const frame = g.nodes.find(n => n.key === 's:model');
    expect(frame?.kind).toBe('cluster');
    expect(g.nodes.find(n => n.key === 's:model/dense')?.parent).toBe('s:model');
    expect(g.unitOf[1]).toBe('s:model/dense');
  });

  it('keeps the first view of a 7k-op graph small', () => {
    const ops: OpSpec[] = [];
    for (let b = 0; b < 16; b++) {
      for (let k = 0; k < 200; k++) {
        ops.push({ n: `resnet50/block${b}/conv${k % 3}/op${k}`, i: ops.length ? [ops.length - 1] : [] });
        ops.push({ n: `gradients/resnet50/block${b}/conv${k % 3}/op${k}_grad`, i: [ops.length - 1] });
      }
    }
    const r = report(payload(ops));
    const tree = buildScopeTree(r);
    const expanded = initialExpansion(tree, 40);
    const g = visibleGraph(r, tree, expanded);
    expect(r.ops.length).toBe(6400);
    expect(g.nodes.length).toBeLessThanOrEqual(40 + expanded.size);
    expect(g.nodes.length).toBeGreaterThan(2);
  });

  it('opens small scopes first and leaves one too big for the budget closed', () => {
    const ops: OpSpec[] = [
      ...Array.from({ length: 50 }, (_, k) => ({ n: `big/op${k}` })),
      ...Array.from({ length: 3 }, (_, k) => ({ n: `small/op${k}` }))
    ];
    const r = report(payload(ops));
    const expanded = initialExpansion(buildScopeTree(r), 40);
    expect([...expanded]).toEqual(['s:small']);
  });
});
