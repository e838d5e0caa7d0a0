/**
 * What a Keras or profiled/referenced run puts first: the overflow, host and AI CPU ops in the lead
 * box and drawn as ops in the first graph view (the overflow outlined), the worst drift in the
 * header with its units, no per-op estimate suffix, a cluster column only when it tells something,
 * and run files inside the notebook's folder as links JupyterLab opens.
 */

import { beforeEach, describe, expect, it } from 'vitest';

import { isOpenable } from '../src/elements';
import { DRIFT_UNITS, driftText, g3, NEAR_ZERO_NOTE, opMarks } from '../src/optext';
import { renderReport } from '../src/view';
import { payload } from './fixtures';

type Op = Record<string, unknown>;

/** A Keras-like train step: bookkeeping around the user's layers, one AI CPU op, one overflow. */
function kerasRun(): Record<string, unknown> {
  const ops: Op[] = [];
  const add = (n: string, t: string, extra: Op = {}): number => {
    ops.push({ n, t, e: 'AI_CORE', d0: 'float32', d1: 'float32', c: 0, pr: 0, xr: 1, i: ops.length ? [ops.length - 1] : [], ...extra });
    return ops.length - 1;
  };
  for (let k = 0; k < 30; k++) {
    add(`StatefulPartitionedCall/bookkeeping_${k}/ReadVariableOp`, 'ReadVariableOp');
    add(`StatefulPartitionedCall/bookkeeping_${k}/AssignAddVariableOp`, 'AssignAddVariableOp');
  }
  for (let k = 0; k < 30; k++) {
    add(`sequential_1/conv2d_${k}/convolution`, 'Conv2D', { d1: 'float16', xr: 3, est_us: 5 });
    add(`sequential_1/conv2d_${k}/Relu`, 'Relu', { est_us: 5 });
  }
  const deep = add('sequential_1/head/deep/scope/square_loss/Square', 'Square', {
    d1: 'float16',
    ov: true,
    dr: { max_abs: 1, max_rel: 99, cos: 0.5, rel_rmse: 0.7, step: 1 }
  });
  // A noisy element-wise relative error on a tensor that barely drifted (cos 1.0000): ranked below.
  const noisy = add('sequential_1/head/noisy/BiasAdd', 'BiasAdd', { dr: { max_abs: 1e-5, max_rel: 1000, cos: 1, rel_rmse: 1.2e-5, step: 0 } });
  const cpu = add('sequential_1/metrics/accuracy/Bitcast', 'Bitcast', { e: 'AI_CPU', pr: 2 });
  const p = payload([], { kind: 'run' });
  p.ops = ops;
  (p.summary as Record<string, number>).ops = ops.length;
  p.run = {
    backend: 'emulator',
    steps: 2,
    wall_ms: 3,
    reference_wall_ms: 2,
    first_overflow: ops[deep].n,
    dump_dir: 'npu_dump',
    trace_file: '/tmp/elsewhere/trace.json',
    op_summary_csv: null,
    drift_worst: [deep, noisy]
  };
  p.labels = { wall_ms: 'CPU time of the emulation', est_us: 'estimated by the cost model' };
  // The lines _display/facts.py ships for this run (their wording is checked in tests/display).
  p.facts = [
    { key: 'run.dump_dir', label: 'Dump folder', text: 'npu_dump', tone: 'path' },
    { key: 'run.trace_file', label: 'Trace (open in Perfetto)', text: '/tmp/elsewhere/trace.json', tone: 'path' },
    {
      key: 'ops.dr',
      label: `Largest drift vs float32, each op's worst step (${DRIFT_UNITS})`,
      text: `${ops[deep].n} rel. RMSE 0.7, max abs 1, cos 0.5000, step 1`,
      tone: ''
    },
    { key: 'ops.est_us', label: 'Estimated costliest ops (estimated by the cost model, not measured)', text: 'x 5.0 \u00b5s', tone: '' }
  ];
  return Object.assign(p, { deep, cpu });
}

describe('what a run report puts first', () => {
  let host: HTMLElement;
  beforeEach(() => {
    document.body.innerHTML = '';
    host = document.createElement('div');
    document.body.append(host);
  });

  it('names the overflow and the AI CPU op in the lead box', () => {
    const p = kerasRun();
    renderReport(host, p);
    expect(host.querySelector('.npu-lead [data-lead="overflow"]')?.textContent).toContain('square_loss/Square');
    expect(host.querySelector('.npu-lead [data-lead="aicpu"]')?.textContent).toContain('accuracy/Bitcast');
  });

  it('draws the overflowing op and the AI CPU op as ops in the first view, the overflow outlined', () => {
    const p = kerasRun() as Record<string, unknown> & { deep: number; cpu: number };
    const view = renderReport(host, p)!;
    const deep = host.querySelector(`.npu-graph g.npu-op[data-op="${p.deep}"]`);
    expect(deep).not.toBeNull();
    expect(deep!.classList.contains('npu-overflow')).toBe(true);
    expect(host.querySelector(`.npu-graph g.npu-op[data-op="${p.cpu}"]`)).not.toBeNull();
    // The user's layers are opened, the bookkeeping scope stays one box.
    const scopes = [...host.querySelectorAll('.npu-graph g.npu-scope title')].map(t => t.textContent ?? '');
    expect(scopes.some(t => t.startsWith('StatefulPartitionedCall:'))).toBe(true);
    const ops = [...host.querySelectorAll('.npu-graph g.npu-op')].map(g => g.getAttribute('aria-label') ?? '');
    expect(ops.some(n => n.startsWith('sequential_1/conv2d_0/convolution'))).toBe(true);
    expect(ops.some(n => n.startsWith('StatefulPartitionedCall/'))).toBe(false);
    expect(view.graph.drawnCount).toBeLessThanOrEqual(120);
  });

  it('puts the worst drift in the header and explains the drift units on the column', () => {
    renderReport(host, kerasRun());
    const chip = host.querySelector('.npu-summary .npu-chip-drift');
    expect(chip?.textContent).toContain('0.7 rel. RMSE');
    expect(chip?.textContent).toContain('square_loss/Square');
    expect(host.querySelector('[data-fact="ops.dr"]')?.textContent).toContain(DRIFT_UNITS);
    const head = [...host.querySelectorAll('.npu-table th')].find(th => th.textContent?.startsWith('drift'));
    expect(head?.getAttribute('title')).toContain(DRIFT_UNITS);
  });

  it('renders a run whose overflowed op has non-finite drift (null in the payload)', () => {
    const p = kerasRun() as Record<string, unknown> & { deep: number };
    (p.ops as Op[])[p.deep].dr = { max_abs: null, max_rel: null, cos: null, rel_rmse: null, step: 0 };
    const view = renderReport(host, p);
    expect(host.querySelector('.npu-message')).toBeNull();
    expect(view).not.toBeNull();
    // The non-finite one is the worst drift, and the table says so.
    expect(host.querySelector('.npu-summary .npu-chip-drift')?.textContent).toContain('inf/NaN');
    expect(host.querySelector('.npu-table')?.textContent).toContain('(inf/NaN)');
    view!.select(p.deep);
    expect(host.querySelector('.npu-details')?.textContent).toContain('not finite (inf/NaN)');
  });

  it('names in the header the op Python ranked first, not the largest element-wise relative error', () => {
    const p = kerasRun() as Record<string, unknown> & { deep: number };
    (p.run as Record<string, unknown>).drift_worst = [p.deep + 1];
    renderReport(host, p);
    const chip = host.querySelector('.npu-summary .npu-chip-drift');
    expect(chip?.textContent).toContain('noisy/BiasAdd');
    expect(chip?.textContent).toContain('1.2e-05 rel. RMSE');
  });

  it('writes an op drift as _display/drift.py does, with Python\'s {:.3g}', () => {
    expect(driftText({ max_abs: 1e-5, max_rel: 1000, cos: 1, rel_rmse: 1.2e-5, step: 0 })).toBe(
      'rel. RMSE 1.2e-05, max abs 1e-05, cos 1.0000, step 0'
    );
    expect(driftText({ max_abs: null, max_rel: null, cos: null, rel_rmse: null, step: 3 })).toBe('not finite (inf/NaN), step 3');
    expect(driftText({ max_abs: 0.0123, max_rel: 0.456, cos: 0.9876 })).toBe('0.0123 abs, 0.456 rel, cos 0.9876'); // an older row
    // Python: [f'{v:.3g}' for v in ...]
    const values = [1.2e-5, 1234.5, 999.6, 0.0001, 0.000123456, 0.5, 12.34, 123456789, 0.00099996];
    expect(values.map(g3)).toEqual(['1.2e-05', '1.23e+03', '1e+03', '0.0001', '0.000123', '0.5', '12.3', '1.23e+08', '0.001']);
  });

  it('writes a cancelled reference by its figure against its inputs\' scale, and says so (drift_ranking.py)', () => {
    const cancelled = { max_abs: 0.000136, max_rel: 9e4, cos: 0.4845, rel_rmse: 666, step: 0, ref_rms: 2e-8, size: 8, in_rel: 0.00163 };
    expect(driftText(cancelled)).toBe(
      "rel. RMSE 0.00163 against its inputs' scale (reference \u2248 0 next to its inputs (cancellation): drift measured " +
        "against the inputs' scale; 666 against its own reference), max abs 0.000136, cos 0.4845, step 0"
    );
    expect(driftText({ max_abs: 1e-5, max_rel: 9, cos: 0.5, rel_rmse: 666, step: 0, from_cancelled: true })).toBe(
      'rel. RMSE 666, max abs 1e-05, cos 0.5000, step 0, computes from a cancelled value: its float32 reference is rounding noise'
    );
    // a row written before the cancellation fields reads as before
    expect(driftText({ max_abs: 1e-5, max_rel: 9, cos: 0.5, rel_rmse: 666, step: 0 })).toBe('rel. RMSE 666, max abs 1e-05, cos 0.5000, step 0');
  });

  it('says an op whose float32 values are \u2248 0 ranks after the others, and stays silent for values in range (drift_ranking.py)', () => {
    const tiny = { max_abs: 3e-9, max_rel: 1, cos: 0, rel_rmse: 1, step: 0, ref_rms: 3e-9, size: 64 };
    expect(driftText(tiny)).toBe(`rel. RMSE 1, max abs 3e-09, cos 0.0000, step 0, ${NEAR_ZERO_NOTE}`);
    expect(driftText({ ...tiny, ref_rms: 1 })).toBe('rel. RMSE 1, max abs 3e-09, cos 0.0000, step 0');
    expect(driftText({ ...tiny, rel_rmse: null })).toBe('not finite (inf/NaN), max abs 3e-09, cos 0.0000, step 0');
    expect(driftText({ ...tiny, from_cancelled: true })).not.toContain(NEAR_ZERO_NOTE);
    const zeros = { max_abs: 0, max_rel: 0, cos: 1, rel_rmse: 0, step: 0, ref_rms: 0, size: 16 }; // no drift at all
    expect(driftText(zeros)).toBe('rel. RMSE 0, max abs 0, cos 1.0000, step 0');
  });

  it('shows the worst-drift chip of a cancelled reference by its figure against its inputs\' scale', () => {
    const p = kerasRun() as Record<string, unknown> & { deep: number };
    (p.run as Record<string, unknown>).drift_worst = [p.deep + 1];
    const ops = p.ops as Record<string, unknown>[];
    ops[p.deep + 1] = { ...ops[p.deep + 1], dr: { max_abs: 1e-4, max_rel: 9e4, cos: 0.48, rel_rmse: 666, step: 0, in_rel: 0.00163 } };
    renderReport(host, p);
    const chip = host.querySelector('.npu-summary .npu-chip-drift');
    expect(chip?.textContent).toContain("0.00163 rel. RMSE against its inputs' scale");
    expect(chip?.textContent).not.toContain('666');
  });

  it('shows no worst-drift chip when no op drifted (an init run: zero drift is no drift)', () => {
    const p = kerasRun() as Record<string, unknown> & { deep: number };
    (p.run as Record<string, unknown>).drift_worst = [];
    renderReport(host, p);
    expect(host.querySelector('.npu-summary .npu-chip-drift')).toBeNull();
  });

  it('keeps the cost model estimate off the op names and lists it once', () => {
    renderReport(host, kerasRun());
    expect(opMarks({ n: 'x', t: 'X', e: 'AI_CORE', d0: '', d1: '', c: 0, pr: 0, xr: 0, i: [], est_us: 5 })).toEqual([]);
    expect(host.querySelector('.npu-table')?.textContent).not.toContain('estimate');
    expect(host.querySelector('[data-fact="ops.est_us"]')?.textContent).toContain('not measured');
  });

  it('shows a cluster column only with two or more clusters and no measurement columns', () => {
    const one = renderReport(host, kerasRun())!;
    expect(one.table.columnSpecs.map(c => c.key)).not.toContain('cluster');
    const p = kerasRun();
    (p.ops as Op[]).forEach(o => delete o.dr);
    p.clusters = [
      { name: 'GeOp1_0', size: 1 },
      { name: 'GeOp2_0', size: 1 }
    ];
    (p.ops as Op[])[0].c = 1;
    const two = renderReport(host, p)!;
    expect(two.table.columnSpecs.map(c => c.key)).toContain('cluster');
    (p.ops as Op[])[0].dr = { max_abs: 0.1, max_rel: 0.1, cos: 0.99 };
    const measured = renderReport(host, p)!;
    expect(measured.table.columnSpecs.map(c => c.key)).not.toContain('cluster');
  });

  it('links run files inside the notebook folder, through the linker, and leaves outside paths as text', () => {
    const linked: string[] = [];
    renderReport(host, kerasRun(), (anchor, path, folder) => linked.push(`${anchor.tagName}:${path}:${folder}`));
    expect(linked).toEqual(['A:npu_dump:true']);
    const dump = host.querySelector('[data-fact="run.dump_dir"] a');
    expect(dump?.getAttribute('href')).toBe('npu_dump');
    expect(host.querySelector('[data-fact="run.trace_file"] a')).toBeNull();
    expect(isOpenable('../x')).toBe(false);
    expect(isOpenable('javascript:alert(1)')).toBe(false);
    expect(isOpenable('/abs')).toBe(false);
  });
});
