/**
 * The graph's first view (firstview.ts): fitted to the cell while that keeps box text legible,
 * otherwise drawn at the readable scale and opened on the lead op; small graphs as before.
 */

import { describe, expect, it, vi } from 'vitest';

import { READABLE_ZOOM, SUBLABEL_PX, LEGIBLE_PX, centredOn, firstScale, leadOp, scrollsSideways } from '../src/firstview';
import { GraphView } from '../src/graphview';
import { Report, parseReport } from '../src/schema';
import { buildScopeTree } from '../src/scopes';
import { OpSpec, payload, smallTraining } from './fixtures';

function report(p: Record<string, unknown>): Report {
  const r = parseReport(p);
  if (!r.ok) {
    throw new Error(r.message);
  }
  return r.report;
}

/** A flat level as wide as a Keras step's: `n` unscoped ops side by side, then an AI CPU op under them. */
function flat(n: number): Report {
  const ops: OpSpec[] = [];
  for (let k = 0; k < n; k++) {
    ops.push({ n: `Cast_${k}`, t: 'Cast' });
  }
  ops.push({ n: 'IdentityN', t: 'IdentityN', e: 'AI_CPU', i: [n - 1] });
  return report(payload(ops));
}

/** A graph view as the page has it: `width` x `height` px of view (jsdom lays nothing out). */
function sized(r: Report, width: number, height = 700): GraphView {
  const graph = new GraphView(r, buildScopeTree(r), () => undefined);
  Object.defineProperty(graph.node, 'clientWidth', { value: width });
  Object.defineProperty(graph.node, 'clientHeight', { value: height });
  return graph;
}

function natural(graph: GraphView): number {
  return Number(graph.node.querySelector('svg')!.getAttribute('viewBox')!.split(' ')[2]);
}

describe('the first view scale', () => {
  it('keeps the smallest box text at a legible size', () => {
    expect(SUBLABEL_PX * READABLE_ZOOM).toBeCloseTo(LEGIBLE_PX);
  });

  it('fits a drawing to the cell while that keeps text legible, never above natural size', () => {
    expect(firstScale(400, 1000)).toBe(1);
    expect(firstScale(1050, 1000)).toBeCloseTo(1000 / 1050);
    expect(scrollsSideways(400, 1000)).toBe(false);
    expect(scrollsSideways(1050, 1000)).toBe(false);
  });

  it('stops at the readable scale for a wider drawing, which then scrolls', () => {
    expect(firstScale(2088, 966)).toBe(READABLE_ZOOM);
    expect(scrollsSideways(2088, 966)).toBe(true);
  });

  it('uses natural size until the view has a width', () => {
    expect(firstScale(2088, 0)).toBe(1);
    expect(scrollsSideways(2088, 0)).toBe(false);
  });

  it('centres a box in the view, never scrolling before the start', () => {
    expect(centredOn({ x: 1000, y: 800, width: 80, height: 34 }, 0.9, { width: 900, height: 700 })).toEqual({
      left: Math.round(1040 * 0.9 - 450),
      top: Math.round(817 * 0.9 - 350)
    });
    expect(centredOn({ x: 10, y: 10, width: 80, height: 34 }, 1, { width: 900, height: 700 })).toEqual({ left: 0, top: 0 });
  });
});

describe('the lead op', () => {
  it('is the first overflow, else a host op that computes, else an AI CPU op, else a precision change', () => {
    const ops: OpSpec[] = [
      { n: 'a', t: 'MatMul', d1: 'float16' },
      { n: 'b', t: 'IdentityN', e: 'AI_CPU' },
      { n: 'c', t: 'OptionalFromValue', e: 'HOST' },
      { n: 'd', t: 'Const', e: 'HOST' }
    ];
    expect(leadOp(report(payload(ops)))).toBe(2);
    expect(leadOp(report(payload(ops.slice(0, 2))))).toBe(1);
    expect(leadOp(report(payload(ops.slice(0, 1))))).toBe(0);
    expect(leadOp(report(payload([ops[3], { n: 'e', t: 'Relu' }])))).toBeNull(); // host plumbing is no lead
    const p = payload(ops);
    (p.ops as Record<string, unknown>[])[0].ov = true;
    expect(leadOp(report(p))).toBe(0);
  });
});

describe('the first view in the page', () => {
  it('draws a small graph fitted to the cell and unscrolled, as before', () => {
    const graph = sized(report(smallTraining()), 1000);
    const svg = graph.node.querySelector('svg')!;
    expect(graph.fittedToWidth).toBe(true);
    expect(svg.style.width).toBe('100%');
    expect(svg.style.maxWidth).toBe(`${Math.ceil(natural(graph))}px`);
    expect(svg.style.height).toBe('auto');
    // The readable floor is below what the cell gives it, so it changes nothing here.
    expect(parseFloat(svg.style.minWidth)).toBeLessThanOrEqual(1000);
    expect(graph.zoomLevel).toBe(1);
    graph.settleFirstView();
    expect([graph.node.scrollLeft, graph.node.scrollTop]).toEqual([0, 0]);
    expect(graph.note.hidden).toBe(true);
  });

  it('draws a wide flat level at the readable scale and opens it on the lead op', () => {
    const r = flat(40);
    const graph = sized(r, 966);
    const svg = graph.node.querySelector('svg')!;
    expect(natural(graph)).toBeGreaterThan(966 / READABLE_ZOOM);
    expect(parseFloat(svg.style.minWidth)).toBe(Math.ceil(natural(graph) * READABLE_ZOOM));
    expect(graph.zoomLevel).toBe(READABLE_ZOOM);
    graph.settleFirstView();
    const lead = graph.node.querySelector(`g.npu-op[data-op="${r.ops.length - 1}"] rect`)!;
    const centre = (Number(lead.getAttribute('x')) + Number(lead.getAttribute('width')) / 2) * READABLE_ZOOM;
    expect(graph.node.scrollLeft).toBeGreaterThan(0);
    expect(Math.abs(centre - graph.node.scrollLeft - 966 / 2)).toBeLessThanOrEqual(1); // in the middle of the view
    // The toolbar says the view is part of the drawing, until the person zooms.
    expect(graph.note.hidden).toBe(false);
    expect(graph.note.textContent).toBe('shown at 90% so labels stay readable: scroll for the rest, or \u201cfit\u201d');
    graph.setZoom(0.5);
    expect(graph.note.hidden).toBe(true);
  });

  it('opens the same payload at the same place every time', () => {
    const at = (): number[] => {
      const graph = sized(flat(40), 966);
      graph.settleFirstView();
      return [graph.node.scrollLeft, graph.node.scrollTop];
    };
    expect(at()).toEqual(at());
  });

  it('leaves a view the person already zoomed where it is', () => {
    const graph = sized(flat(40), 966);
    graph.setZoom(0.5);
    graph.settleFirstView();
    expect(graph.node.scrollLeft).toBe(0);
  });

  it('waits for a view not yet laid out (a hidden tab) to have its width', () => {
    let resized: (() => void) | null = null;
    vi.stubGlobal(
      'ResizeObserver',
      class {
        constructor(callback: () => void) {
          resized = callback;
        }
        observe(): void {}
        disconnect(): void {}
      }
    );
    try {
      const r = flat(40);
      const graph = new GraphView(r, buildScopeTree(r), () => undefined);
      let width = 0;
      Object.defineProperty(graph.node, 'clientWidth', { get: () => width });
      Object.defineProperty(graph.node, 'clientHeight', { value: 700 });
      graph.settleWhenShown();
      expect(graph.node.scrollLeft).toBe(0);
      width = 966;
      resized!();
      expect(graph.node.scrollLeft).toBeGreaterThan(0);
    } finally {
      vi.unstubAllGlobals();
    }
  });
});
