import { beforeEach, describe, expect, it } from 'vitest';

import { GraphView } from '../src/graphview';
import { hostOps, leadBox } from '../src/lead';
import { factText, factsList } from '../src/facts';
import { parseReport } from '../src/parse';
import type { Report } from '../src/schema';
import { buildScopeTree } from '../src/scopes';
import { OpSpec, payload, smallTraining } from './fixtures';

function report(p: Record<string, unknown>): Report {
  const r = parseReport(p);
  if (!r.ok) {
    throw new Error(r.message);
  }
  return r.report;
}

const TRANSFER_TEXT = 'iterator/IteratorGetNext \u2192 model/MatMul (host \u2192 device, float32, 4.0 KiB)';

function mixed(): Report {
  return report(
    payload(
      [
        { n: 'feed/Const', t: 'Const', e: 'HOST', c: -1 },
        { n: 'iterator/IteratorGetNext', t: 'IteratorGetNext', e: 'HOST', c: -1 },
        { n: 'model/MatMul', t: 'MatMul', d1: 'float16', i: [1] }
      ],
      {
        transfers: [{ s: 1, d: 2, dt: 'float32', b: 4096, dir: 'h2d' }],
        // as _display/facts.py ships it (its text is checked in tests/display)
        facts: [{ key: 'transfers', label: '1 transfer', text: TRANSFER_TEXT, tone: '' }]
      }
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

describe('the shipped facts', () => {
  beforeEach(() => document.body.replaceChildren());

  const facts = [
    { key: 'run', label: 'Run', text: 'backend emulator \u00b7 2 steps \u00b7 3.00 ms per step (CPU time of the emulation)', tone: '' },
    { key: 'run.first_overflow', label: 'First overflow (inf/NaN)', text: 'loss/Mean', tone: 'error' },
    { key: 'run.dump_dir', label: 'Dump folder', text: 'npu_dump', tone: 'path' },
    { key: 'transfers', label: '1 transfer', text: 'a \u2192 b', tone: '' }
  ];

  it('are drawn as shipped, in their order, each with its field and tone', () => {
    const list = factsList(report({ ...smallTraining(), kind: 'run', facts }))!;
    const items = [...list.querySelectorAll('li')];
    expect(items.map(li => li.textContent)).toEqual(facts.map(f => `${f.label}: ${f.text}`));
    expect(items.map(li => li.getAttribute('data-fact'))).toEqual(facts.map(f => f.key));
    expect(items[1].classList.contains('npu-fact-error')).toBe(true);
    expect(items[2].querySelector('a')?.getAttribute('href')).toBe('npu_dump');
  });

  it('leave out what another part of the view shows, and give the lead box its transfers line', () => {
    const r = report({ ...smallTraining(), kind: 'run', facts });
    expect([...factsList(r, ['transfers'])!.querySelectorAll('li')].map(li => li.getAttribute('data-fact'))).not.toContain('transfers');
    expect(factText(r, 'transfers')).toBe('a \u2192 b');
    expect(factText(r, 'cost_model')).toBe('');
  });

  it('are absent from a payload written before they were shipped', () => {
    const r = report(smallTraining());
    expect(r.facts).toEqual([]);
    expect(factsList(r)).toBeNull();
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
