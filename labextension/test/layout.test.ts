import { describe, expect, it } from 'vitest';

import { LayoutCache, MIN_READABLE_ZOOM, NODE_HEIGHT, fitZoom, frameLabel, layoutGraph, shortLabel } from '../src/layout';
import { parseReport } from '../src/parse';
import type { Report } from '../src/schema';
import { buildScopeTree, opKey } from '../src/scopes';
import { OpSpec, payload, smallTraining } from './fixtures';

function report(p: Record<string, unknown>): Report {
  const r = parseReport(p);
  if (!r.ok) {
    throw new Error(r.message);
  }
  return r.report;
}

function inside(inner: { x: number; y: number; width: number; height: number }, outer: typeof inner): boolean {
  return (
    inner.x >= outer.x && inner.y >= outer.y && inner.x + inner.width <= outer.x + outer.width &&
    inner.y + inner.height <= outer.y + outer.height
  );
}

describe('layoutGraph', () => {
  it('merges the edges into a collapsed scope, with a count', () => {
    const r = report(smallTraining());
    const placed = layoutGraph(new LayoutCache(r, buildScopeTree(r)), new Set());
    const fromInput = placed.edges.filter(e => e.source === opKey(0)).map(e => e.target);
    expect(fromInput.sort()).toEqual(['s:gradients/model', 's:model']);
    // input feeds model/dense/MatMul and both gradient MatMuls: the two into gradients/model merge.
    expect(placed.edges.find(e => e.source === opKey(0) && e.target === 's:gradients/model')?.count).toBe(1);
    expect(placed.edges.find(e => e.source === opKey(0) && e.target === 's:model')?.count).toBe(1);
    expect(placed.edges.every(e => e.source !== e.target && e.points.length >= 2)).toBe(true);
    const two = report(payload([{ n: 'a/x' }, { n: 'a/y' }, { n: 'b/x', i: [0] }, { n: 'b/y', i: [1, 0] }]));
    const merged = layoutGraph(new LayoutCache(two, buildScopeTree(two)), new Set()).edges;
    expect(merged.map(e => [e.source, e.target, e.count])).toEqual([['s:a', 's:b', 3]]);
  });

  it('places the ops of an expanded scope inside its frame and draws edges where they part', () => {
    const r = report(smallTraining());
    const tree = buildScopeTree(r);
    const placed = layoutGraph(new LayoutCache(r, tree), new Set(['s:model', 's:model/dense']));
    const box = (key: string) => placed.nodes.find(n => n.node.key === key)!.box;
    expect(inside(box(opKey(1)), box('s:model/dense'))).toBe(true);
    expect(inside(box('s:model/dense'), box('s:model'))).toBe(true);
    // dense/MatMul -> dense/BiasAdd is drawn inside model/dense; model/dense -> model/dense_1 one level up.
    expect(placed.edges.some(e => e.source === opKey(1) && e.target === opKey(2))).toBe(true);
    expect(placed.edges.some(e => e.source === 's:model/dense' && e.target === opKey(3))).toBe(true);
  });

  it('keeps boxes of one level from overlapping', () => {
    const ops: OpSpec[] = Array.from({ length: 40 }, (_, k) => ({ n: `s${k % 4}/op${k}`, i: k > 3 ? [k - 4] : [] }));
    const r = report(payload(ops));
    const tree = buildScopeTree(r);
    const placed = layoutGraph(new LayoutCache(r, tree), new Set(['s:s0', 's:s1', 's:s2', 's:s3']));
    const tops = placed.nodes.filter(n => n.node.parent === null).map(n => n.box);
    for (let a = 0; a < tops.length; a++) {
      for (let b = a + 1; b < tops.length; b++) {
        const A = tops[a];
        const B = tops[b];
        const apart = A.x + A.width <= B.x || B.x + B.width <= A.x || A.y + A.height <= B.y || B.y + B.height <= A.y;
        expect(apart).toBe(true);
      }
    }
  });

  it('reuses the layout of a scope whose expanded descendants did not change', () => {
    const r = report(smallTraining());
    const tree = buildScopeTree(r);
    const cache = new LayoutCache(r, tree);
    layoutGraph(cache, new Set(['s:model']));
    const before = cache.interiors.get(tree.byId.get('s:model')!);
    layoutGraph(cache, new Set(['s:model', 's:gradients/model']));
    expect(cache.interiors.get(tree.byId.get('s:model')!)).toBe(before);
  });

  it('shortens long labels in the middle, keeping the start a person wrote and the distinctive end', () => {
    expect(shortLabel('abc', 5)).toBe('abc');
    expect(shortLabel('Conv2DBackpropFilter', 8)).toBe('Co\u2026ilter');
    const label = shortLabel('sequential_1_1/conv2d_1_1/convolution/Conv2DBackpropFilter', 28);
    expect(label).toHaveLength(28);
    expect(label.startsWith('sequential')).toBe(true);
    expect(label.endsWith('BackpropFilter')).toBe(true);
  });

  it("makes an expanded scope's frame at least as wide as its label, so the label overlaps no box", () => {
    const long = 'a_very_long_keras_scope_name_that_is_wider_than_its_one_op';
    const r = report(payload([{ n: `${long}/x`, t: 'Relu' }, { n: `${long}/y`, t: 'Relu', i: [0] }]));
    const tree = buildScopeTree(r);
    const placed = layoutGraph(new LayoutCache(r, tree), new Set([`s:${long}`]));
    const frame = placed.nodes.find(n => n.node.kind === 'cluster')!;
    expect(frame.box.width).toBeGreaterThanOrEqual(frameLabel(tree.byId.get(`s:${long}`)!, long).length * 6.6);
    for (const op of placed.nodes.filter(n => n.node.kind === 'op')) {
      expect(op.box.x).toBeGreaterThanOrEqual(frame.box.x);
      expect(op.box.x + op.box.width).toBeLessThanOrEqual(frame.box.x + frame.box.width);
    }
  });

  it('makes a box taller for the dtype-change line only when the dtype changed', () => {
    const r = report(payload([{ n: 'a', t: 'MatMul', d1: 'float16' }, { n: 'b', t: 'MatMul', i: [0] }]));
    const placed = layoutGraph(new LayoutCache(r, buildScopeTree(r)), new Set());
    const box = (op: number) => placed.nodes.find(n => n.node.key === opKey(op))!.box;
    expect(box(0).height).toBeGreaterThan(NODE_HEIGHT);
    expect(box(1).height).toBe(NODE_HEIGHT);
  });

  it('sizes the drawing to hold every edge point as well as every box', () => {
    const ops: OpSpec[] = Array.from({ length: 12 }, (_, k) => ({ n: `op${k}`, i: k > 0 ? [0, k - 1] : [] }));
    const r = report(payload(ops));
    const placed = layoutGraph(new LayoutCache(r, buildScopeTree(r)), new Set());
    for (const e of placed.edges) {
      for (const p of e.points) {
        expect(p.x).toBeLessThanOrEqual(placed.width);
        expect(p.y).toBeLessThanOrEqual(placed.height);
      }
    }
  });
});

describe('fitZoom', () => {
  it('shrinks a tall drawing to the view height, not only to its width', () => {
    expect(fitZoom({ width: 400, height: 800 }, { width: 808, height: 508 })).toBeCloseTo(500 / 800);
    expect(fitZoom({ width: 400, height: 2000 }, { width: 808, height: 508 }, 0.1)).toBeCloseTo(0.25);
  });

  it('shrinks a wide drawing to the view width', () => {
    expect(fitZoom({ width: 1600, height: 100 }, { width: 808, height: 508 })).toBeCloseTo(0.5);
  });

  it('never enlarges a small drawing and never shrinks labels below readable size (the view scrolls)', () => {
    expect(fitZoom({ width: 100, height: 100 }, { width: 808, height: 508 })).toBe(1);
    expect(fitZoom({ width: 100000, height: 100 }, { width: 808, height: 508 })).toBe(MIN_READABLE_ZOOM);
    expect(MIN_READABLE_ZOOM).toBeGreaterThanOrEqual(0.5);
  });
});
