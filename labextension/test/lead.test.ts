import { beforeEach, describe, expect, it } from 'vitest';

import { GraphView } from '../src/graphview';
import { hostOps, leadBox } from '../src/lead';
import { reportFacts } from '../src/facts';
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

function mixed(): Report {
  return report(
    payload(
      [
        { n: 'feed/Const', t: 'Const', e: 'HOST', c: -1 },
        { n: 'iterator/IteratorGetNext', t: 'IteratorGetNext', e: 'HOST', c: -1 },
        { n: 'model/MatMul', t: 'MatMul', d1: 'float16', i: [1] }
      ],
      { transfers: [{ s: 1, d: 2, dt: 'float32', b: 4096, dir: 'h2d' }] }
    )
  );
}

describe('the lead box', () => {
  beforeEach(() => document.body.replaceChildren());

  it('lists host ops that compute before host constants', () => {
    const r = mixed();
    expect(hostOps(r).map(k => r.ops[k].n)).toEqual(['iterator/IteratorGetNext', 'feed/Const']);
  });

  it('names host ops, transfers and precision changes in that order, as text', () => {
    const box = leadBox(mixed(), () => undefined)!;
    const rows = [...box.querySelectorAll('.npu-lead-row')].map(r => r.getAttribute('data-lead'));
    expect(rows).toEqual(['host', 'transfers', 'precision']);
    expect(box.textContent).toContain('iterator/IteratorGetNext \u2192 model/MatMul (host \u2192 device, float32, 4.0 KiB)');
  });

  it('selects an op when its name is clicked', () => {
    const picked: number[] = [];
    const box = leadBox(mixed(), op => picked.push(op))!;
    box.querySelector<HTMLButtonElement>('button[data-op="1"]')!.click();
    expect(picked).toEqual([1]);
  });

  it('is absent when everything stays on the device in its own precision', () => {
    expect(leadBox(report(payload([{ n: 'a' }, { n: 'b', i: [0] }])), () => undefined)).toBeNull();
  });
});

describe('labels', () => {
  it('labels run times with the payload label and estimates as estimates', () => {
    const r = report({
      ...smallTraining(),
      kind: 'run',
      labels: { wall_ms: 'CPU time of the emulation' },
      cost_model: { step_ms: 1.5, memory_bytes: 2048, step_ratio_fp32: 0.5, memory_ratio_fp32: null, basis: 'b' },
      run: { backend: 'emulator', steps: 2, wall_ms: 3, reference_wall_ms: null, first_overflow: null,
        dump_dir: null, trace_file: null, op_summary_csv: null }
    });
    const facts = reportFacts(r).map(f => `${f.label}: ${f.text}`);
    expect(facts[0]).toBe('Run: backend emulator \u00b7 2 steps \u00b7 3.00 ms per step (CPU time of the emulation)');
    expect(facts).toContain(
      'NPU step (estimated by the cost model, not measured): time 1.500 ms (0.50\u00d7 float32) \u00b7 ' +
        'activation + weight memory 2.0 KiB \u00b7 basis: b'
    );
  });

  it('says "estimated" and "not measured" once, and why a launch-bound step shows 1.00x float32', () => {
    const r = report({
      ...smallTraining(),
      kind: 'run',
      cost_model: { step_ms: 0.05, memory_bytes: 2048, step_ratio_fp32: 1.0, memory_ratio_fp32: 0.5,
        launch_share: 0.93, basis: 'roofline' }
    });
    const [cost] = reportFacts(r).filter(f => f.key === 'cost_model').map(f => `${f.label}: ${f.text}`);
    expect(cost.match(/estimated/g)).toHaveLength(1);
    expect(cost.match(/not measured/g)).toHaveLength(1);
    expect(cost).not.toContain('assumes');
    expect(cost).toContain('(1.00\u00d7 float32: 93% of it is the fixed per-op launch cost, which precision does not change)');
  });
});

describe('the graph on first view', () => {
  it('follows the cell width instead of its natural size, until zoomed', () => {
    const r = report(smallTraining());
    const graph = new GraphView(r, buildScopeTree(r), () => undefined);
    const svg = graph.node.querySelector('svg')!;
    expect(graph.fittedToWidth).toBe(true);
    expect(svg.getAttribute('width')).toBeNull();
    expect(svg.style.width).toBe('100%');
    graph.setZoom(1);
    expect(graph.fittedToWidth).toBe(false);
    expect(Number(svg.getAttribute('width'))).toBeGreaterThan(0);
    expect(svg.style.width).toBe('');
  });
});

describe('the graph opens to the host ops', () => {
  it('opens the scopes around a host op that computes, keeping other scopes collapsed', () => {
    // 50 two-op layers under model/ (too many to open by default); layer7 holds a host op.
    const ops: OpSpec[] = [];
    for (let k = 0; k < 50; k++) {
      ops.push({ n: `model/layer${k}/Relu`, t: 'Relu', i: k ? [2 * k - 1] : [] }, { n: `model/layer${k}/add`, t: 'AddV2', i: [2 * k] });
    }
    ops.push({ n: 'model/layer7/py_func', t: 'PyFunc', e: 'HOST', i: [15] });
    const r = report(payload(ops));
    const tree = buildScopeTree(r);
    const graph = new GraphView(r, tree, () => undefined);
    expect(graph.node.querySelector('g.npu-op[data-op="100"]')).not.toBeNull();
    expect(graph.drawnCount).toBeLessThanOrEqual(120);
    expect(graph.node.querySelectorAll('g.npu-scope').length).toBeGreaterThan(0);
  });
});
