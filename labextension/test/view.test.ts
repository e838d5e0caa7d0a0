import { beforeEach, describe, expect, it } from 'vitest';

import { opKey } from '../src/scopes';
import { ROW_HEIGHT } from '../src/tableview';
import { renderReport, subtitle } from '../src/view';
import { parseReport } from '../src/parse';
import { MIME_TYPE } from '../src/schema';
import { payload, smallTraining } from './fixtures';

const HOSTILE_IMG = '<img src=x onerror="window.__pwned=1">';
const HOSTILE_SCRIPT = '<script>window.__pwned=2</script>';

function hostilePayload(): Record<string, unknown> {
  const p = payload(
    [
      { n: `evil/${HOSTILE_IMG}`, t: HOSTILE_SCRIPT },
      { n: HOSTILE_SCRIPT, t: 'MatMul', i: [0], d1: 'float16', xr: 3 }
    ],
    {
      title: `<b onmouseover="x()">${HOSTILE_IMG}</b>`,
      warnings: [HOSTILE_SCRIPT],
      errors: [HOSTILE_IMG]
    }
  );
  (p.reasons as string[])[0] = `<a href="javascript:alert(1)">${HOSTILE_IMG}</a>`;
  return p;
}

function allAttributes(root: Element): string[] {
  return [root, ...root.querySelectorAll('*')].flatMap(el => [...el.attributes].map(a => a.name));
}

describe('renderReport', () => {
  let host: HTMLElement;
  beforeEach(() => {
    document.body.replaceChildren();
    host = document.createElement('div');
    document.body.append(host);
    (window as unknown as Record<string, unknown>).__pwned = undefined;
  });

  it('draws the summary, the graph and the table', () => {
    const view = renderReport(host, smallTraining());
    expect(view).not.toBeNull();
    expect(host.querySelector('.npu-summary')?.textContent).toContain('9ops');
    expect(host.querySelectorAll('.npu-graph svg g[data-key]').length).toBeGreaterThan(3);
    expect(host.querySelectorAll('.npu-table tbody tr.npu-row').length).toBe(9);
    expect(Number(host.getAttribute('data-render-ms'))).toBeGreaterThanOrEqual(0);
  });

  it('keeps hostile op names, types, reasons and messages as text', () => {
    renderReport(host, hostilePayload());
    expect(host.querySelectorAll('img, script, a, b, iframe').length).toBe(0);
    expect(allAttributes(host).filter(name => name.startsWith('on') || name === 'href' || name === 'src')).toEqual([]);
    const text = host.textContent ?? '';
    expect(text).toContain(HOSTILE_IMG);
    expect(text).toContain(HOSTILE_SCRIPT);
    const names = [...host.querySelectorAll('.npu-table tbody tr.npu-row td:nth-child(2)')].map(td => td.textContent);
    expect(names.sort()).toEqual([`evil/${HOSTILE_IMG}`, HOSTILE_SCRIPT].sort());
    expect((window as unknown as Record<string, unknown>).__pwned).toBeUndefined();
  });

  it('keeps hostile paths, notes, labels and transfer ends in the facts and lead box as text', () => {
    const p = hostilePayload();
    p.kind = 'run';
    p.notes = [HOSTILE_SCRIPT];
    p.labels = { wall_ms: HOSTILE_IMG };
    p.transfers = [{ s: 0, d: 1, dt: HOSTILE_SCRIPT, b: 8, dir: 'h2d' }];
    p.run = { backend: HOSTILE_IMG, steps: 1, wall_ms: 1, reference_wall_ms: null, first_overflow: HOSTILE_SCRIPT,
      dump_dir: HOSTILE_IMG, trace_file: HOSTILE_SCRIPT, op_summary_csv: null,
      dump_skipped: [{ step: 1, reason: HOSTILE_IMG }], nonfinite: { first_op: HOSTILE_IMG, step: 0, reason: HOSTILE_SCRIPT } };
    // As _display/facts.py ships them: user data in labels, texts and paths.
    p.facts = [
      { key: 'run', label: 'Run', text: `backend ${HOSTILE_IMG}`, tone: '' },
      { key: 'run.first_overflow', label: 'First overflow (inf/NaN)', text: HOSTILE_SCRIPT, tone: 'error' },
      { key: 'run.dump_dir', label: 'Dump folder', text: HOSTILE_IMG, tone: 'path' },
      { key: 'run.trace_file', label: 'Trace (open in Perfetto)', text: HOSTILE_SCRIPT, tone: 'path' },
      { key: 'run.dump_skipped', label: `Dump skipped step 1`, text: HOSTILE_IMG, tone: 'warn' },
      { key: 'transfers', label: '1 transfer', text: `evil/${HOSTILE_IMG} \u2192 ${HOSTILE_SCRIPT}`, tone: '' },
      { key: 'notes', label: HOSTILE_IMG, text: HOSTILE_SCRIPT, tone: '' },
      { key: 'notes', label: 'Note', text: HOSTILE_SCRIPT, tone: '' }
    ];
    expect(renderReport(host, p)).not.toBeNull();
    expect(host.querySelectorAll('img, script, b, iframe').length).toBe(0);
    // A relative path is a link to the file: its href is the percent-encoded path, never a scheme.
    for (const a of host.querySelectorAll('a')) {
      expect([encodeURI(HOSTILE_IMG), encodeURI(HOSTILE_SCRIPT)]).toContain(a.getAttribute('href'));
      expect([...a.attributes].map(x => x.name).sort()).toEqual(['class', 'href', 'title']);
    }
    const facts = host.querySelector('.npu-facts')!.textContent!;
    expect(facts).toContain(`Dump folder: ${HOSTILE_IMG}`);
    expect(facts).toContain(`Note: ${HOSTILE_SCRIPT}`);
    expect(host.querySelector('.npu-lead')!.textContent).toContain(HOSTILE_SCRIPT);
    expect((window as unknown as Record<string, unknown>).__pwned).toBeUndefined();
  });

  it('keeps hostile names as text inside the SVG, including tooltips', () => {
    const view = renderReport(host, hostilePayload())!;
    view.select(0);
    const svgText = [...host.querySelectorAll('svg text, svg title')].map(t => t.textContent).join('\n');
    expect(svgText).toContain(HOSTILE_IMG.slice(-20));
    expect(host.querySelectorAll('svg img, svg script, svg foreignObject').length).toBe(0);
  });

  it('shows a plain message for an unknown version and draws nothing else', () => {
    const view = renderReport(host, { ...smallTraining(), version: 7 });
    expect(view).toBeNull();
    expect(host.querySelector('.npu-message')?.textContent).toMatch(/^unsupported report version 7/);
    expect(host.querySelector('svg')).toBeNull();
  });

  it('highlights an op in the graph and the table when its row is clicked', () => {
    renderReport(host, smallTraining());
    const row = [...host.querySelectorAll<HTMLElement>('.npu-table tr.npu-row')].find(
      tr => tr.querySelector('td:nth-child(2)')?.textContent === 'gradients/model/dense/MatMul_grad/MatMul'
    )!;
    row.click();
    const node = host.querySelector('.npu-graph g.npu-op.npu-selected');
    expect(node?.getAttribute('data-op')).toBe('6');
    expect(host.querySelector('.npu-table tr.npu-selected')?.getAttribute('data-op')).toBe('6');
    expect(host.querySelector('.npu-details')?.textContent).toContain('MatMul_grad');
  });

  it('opens a collapsed scope when its box is clicked and selects an op clicked in the graph', () => {
    const ops = Array.from({ length: 50 }, (_, k) => ({ n: `big/layer${k}/op`, i: k ? [k - 1] : [] }));
    const view = renderReport(host, payload(ops))!;
    const scope = host.querySelector<SVGGElement>('g.npu-scope')!;
    expect(scope).not.toBeNull();
    const before = view.graph.drawnCount;
    scope.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    expect(view.graph.drawnCount).toBeGreaterThan(before);
    const op = host.querySelector<SVGGElement>('g.npu-op')!;
    op.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    const selected = op.getAttribute('data-op');
    expect(host.querySelector('.npu-table tr.npu-selected')?.getAttribute('data-op')).toBe(selected);
  });

  it('reveals an op hidden in a collapsed scope when it is selected', () => {
    const ops = Array.from({ length: 50 }, (_, k) => ({ n: `big/layer${k}/op`, i: k ? [k - 1] : [] }));
    const view = renderReport(host, payload(ops))!;
    expect(host.querySelector(`g.npu-op[data-op="30"]`)).toBeNull();
    view.select(30);
    expect(host.querySelector(`g.npu-op[data-op="30"]`)?.classList.contains('npu-selected')).toBe(true);
    expect(view.graph.isExpanded('s:big')).toBe(true);
    expect(opKey(30)).toBe('o:30');
  });

  it('switches colouring between placement and precision', () => {
    const view = renderReport(host, smallTraining())!;
    expect(host.classList.contains('npu-mode-placement')).toBe(true);
    view.setMode('precision');
    expect(host.classList.contains('npu-mode-precision')).toBe(true);
    expect(host.classList.contains('npu-mode-placement')).toBe(false);
    const pressed = [...host.querySelectorAll('button.npu-mode[aria-pressed="true"]')].map(b => b.textContent);
    expect(pressed).toEqual(['Precision']);
  });

  it('sorts the table when a header is clicked and filters as text is typed', () => {
    const view = renderReport(host, smallTraining())!;
    const header = [...host.querySelectorAll<HTMLElement>('.npu-table th')].find(th => th.textContent === 'op')!;
    header.click();
    expect(view.table.currentQuery.sort).toBe('name');
    const filter = host.querySelector<HTMLInputElement>('input.npu-filter')!;
    filter.value = 'applygradient';
    filter.dispatchEvent(new Event('input'));
    expect(view.table.rows).toEqual([7]);
    expect(host.querySelector('.npu-table-count')?.textContent).toBe('1 of 9 ops');
  });

  it('expands a call tree\'s table into one called function with the function picker', () => {
    const p = smallTraining();
    const ops = p.ops as Record<string, unknown>[];
    for (const k of [5, 6, 7]) {
      ops[k] = { ...ops[k], n: `__inference_inner_3/${String(ops[k].n)}`, f: 1 };
    }
    p.functions = [
      { name: '__inference_outer_2', label: 'outer', ops: 6 },
      { name: '__inference_inner_3', label: 'inner', ops: 3 }
    ];
    const view = renderReport(host, p)!;
    const heads = [...host.querySelectorAll<HTMLElement>('.npu-table th')].map(th => th.textContent);
    expect(heads).toContain('function');
    expect(host.querySelector('.npu-summary')?.textContent).toContain('(outer and the 1 function it calls)');
    const pick = host.querySelector<HTMLSelectElement>('select.npu-function-filter')!;
    expect([...pick.options].map(o => o.textContent)).toEqual(['all 2 functions', 'outer', 'inner (called)']);
    pick.value = '1';
    pick.dispatchEvent(new Event('change'));
    expect([...view.table.rows].sort()).toEqual([5, 6, 7]);
    // a called function's op shows its name inside that function, next to the function's name
    const cells = [...host.querySelectorAll('.npu-table tbody td')].map(td => td.textContent);
    expect(cells).toContain('inner');
    expect(cells.some(text => text?.startsWith('__inference_inner_3/'))).toBe(false);
  });

  it('draws only the table rows in view and keeps them while a scroll stays inside them', async () => {
    const ops = Array.from({ length: 1000 }, (_, k) => ({ n: `layer${k % 10}/op${k}` }));
    renderReport(host, payload(ops));
    const rows = () => [...host.querySelectorAll<HTMLElement>('.npu-table tr.npu-row')];
    expect(rows().length).toBeLessThan(100);
    const row5 = rows().find(tr => tr.getAttribute('data-op') === '5')!;
    const scroller = host.querySelector<HTMLElement>('.npu-table-scroll')!;
    scroller.scrollTop = 2 * ROW_HEIGHT;
    scroller.dispatchEvent(new Event('scroll'));
    await new Promise(resolve => setTimeout(resolve, 50));
    expect(rows().includes(row5)).toBe(true);
    scroller.scrollTop = ROW_HEIGHT * 500;
    scroller.dispatchEvent(new Event('scroll'));
    await new Promise(resolve => setTimeout(resolve, 50));
    expect(rows().some(tr => tr.getAttribute('data-op') === '500')).toBe(true);
    expect(rows().includes(row5)).toBe(false);
  });

  it('says "1 cluster", "1 step", "1 warning", "1 error" and "2 ops" in the summary', () => {
    const run = { backend: 'emulator', steps: 1, wall_ms: 3, reference_wall_ms: null, first_overflow: null,
      dump_dir: null, trace_file: null, op_summary_csv: null };
    renderReport(host, payload([{ n: 'a' }, { n: 'b', i: [0] }], { kind: 'run', run, warnings: ['w'], errors: ['e'] }));
    const chips = [...host.querySelectorAll('.npu-summary .npu-chip')].map(c => c.textContent);
    expect(chips).toEqual(expect.arrayContaining(['2ops', '1cluster (GeOp1_0)', '1warning', '1error', '1step']));
    expect(chips.join(' ')).not.toMatch(/\b1(clusters|warnings|errors|steps)\b/);
    renderReport(host, payload([{ n: 'a' }]));
    expect(host.querySelector('.npu-summary')?.textContent).toContain('1op');
    expect(host.querySelector('.npu-table-count')?.textContent).toBe('1 of 1 op');
  });

  it('says in the time chip what the number is and how it is aggregated, as the Python views do', () => {
    // Review: the chip read "ms wall (CPU time of the emulation)": wall and CPU time at once, no aggregate.
    const clock = 'wall-clock time of the emulation on this CPU';
    const run = { backend: 'emulator', steps: 3, wall_ms: 12.25, reference_wall_ms: null, first_overflow: null,
      dump_dir: null, trace_file: null, op_summary_csv: null };
    const chipText = (): string[] => [...host.querySelectorAll('.npu-summary .npu-chip')].map(c => c.textContent ?? '');
    renderReport(host, payload([{ n: 'a' }], { kind: 'run', run, labels: { wall_ms: clock } }));
    expect(chipText()).toContain(`12.3ms per step (${clock})`);
    expect(chipText().join(' ')).not.toMatch(/ms wall|CPU time/);
    const mean = `mean per step over 3 steps: min 1.00 ms, max 30.00 ms, the first 30.00 ms (TensorFlow's warm-up); ${clock}`;
    renderReport(host, payload([{ n: 'a' }], { kind: 'run', run, labels: { wall_ms: mean } }));
    expect(chipText()).toContain(`12.3ms (${mean})`); // the label says its aggregate: not "per step" twice
    const functions = [{ name: '__inference_f_1', label: 'f', ops: 1 }];
    renderReport(host, payload([{ n: 'a' }], { kind: 'run', run, functions, labels: { wall_ms: clock } }));
    expect(chipText()).toEqual(expect.arrayContaining(['3calls', `12.3ms per call (${clock})`]));
    // A function calling no other function has no call tree: run.unit says it counts calls.
    renderReport(host, payload([{ n: 'a' }], { kind: 'run', run: { ...run, unit: 'call' }, labels: { wall_ms: clock } }));
    expect(chipText()).toEqual(expect.arrayContaining(['3calls', `12.3ms per call (${clock})`]));
  });

  it("says where a function's calls came from when its title does not, and nothing when they all came from there", () => {
    // Trial (DIN_ID2641): "Calls of Keras evaluate (test function)" counted fit's validation calls as evaluate's.
    const run = { backend: 'emulator', steps: 9, wall_ms: 2, reference_wall_ms: null, first_overflow: null,
      dump_dir: null, trace_file: null, op_summary_csv: null, unit: 'call' };
    const chips = (): string[] => [...host.querySelectorAll('.npu-summary .npu-chip')].map(c => c.textContent ?? '');
    const calls_from = [{ where: 'during Keras fit (validation)', calls: 6 }, { where: 'in Keras evaluate', calls: 3 }];
    renderReport(host, payload([{ n: 'a' }], { kind: 'run', run: { ...run, calls_from } }));
    expect(chips()).toEqual(expect.arrayContaining(['9calls', '(6 during Keras fit (validation), 3 in Keras evaluate)']));
    renderReport(host, payload([{ n: 'a' }], { kind: 'run', run: { ...run, calls_from: [calls_from[0]] } }));
    expect(chips()).toContain('(all during Keras fit (validation))');
    renderReport(host, payload([{ n: 'a' }], { kind: 'run', run }));
    expect(chips().join(' ')).not.toMatch(/Keras|during/);
  });

  it('says an overflow check that found nothing ran, and nothing of a check where none ran', () => {
    // Trial: with enable_dump_debug on and no overflow, no view said the check ran.
    const run = { backend: 'emulator', steps: 3, wall_ms: 2, reference_wall_ms: null, first_overflow: null,
      dump_dir: null, trace_file: null, op_summary_csv: null, unit: 'call' };
    const check = { checked: 3, mode: 'all', storage: ['float16', 'float32'] };
    const said = 'no inf/NaN in 3 calls (emulated float16/float32 storage on this CPU; dump_debug_mode all: the float outputs of the device ops)';
    const facts = [{ key: 'run.overflow_check', label: 'Overflow check', text: said }];
    renderReport(host, payload([{ n: 'a' }], { kind: 'run', run: { ...run, overflow_check: check }, facts }));
    const chips = (): string => [...host.querySelectorAll('.npu-summary .npu-chip')].map(c => c.textContent).join(' ');
    expect(chips()).toContain('no inf/NaN in 3 callsoverflow check'); // value, then label
    expect(host.querySelector('[data-fact="run.overflow_check"]')?.textContent).toBe(`Overflow check: ${said}`);
    renderReport(host, payload([{ n: 'a' }], { kind: 'run', run })); // no check ran (or a payload from before)
    expect(chips()).not.toContain('overflow check');
    expect(host.textContent).not.toContain('inf/NaN');
    const found = { ...run, first_overflow: 'big', overflow_check: check };
    renderReport(host, payload([{ n: 'a' }], { kind: 'run', run: found }));
    expect(chips()).toContain('bigfirst overflow');
    expect(chips()).not.toContain('no inf/NaN');
  });

  it('drops the subtitle when the title already names the SoC and precision mode', () => {
    renderReport(host, payload([{ n: 'a' }], { title: 'Plan of x \u00b7 allow_fp32_to_fp16 (precision_mode) \u00b7 Ascend910' }));
    expect(host.querySelector('.npu-subtitle')).toBeNull();
    renderReport(host, payload([{ n: 'a' }], { title: 'My plan' }));
    expect(host.querySelector('.npu-subtitle')?.textContent).toBe('Ascend910 \u00b7 precision_mode allow_fp32_to_fp16');
    const r = parseReport(payload([{ n: 'a' }]));
    expect(r.ok && subtitle(r.report, 'Plan on Ascend910')).toBe('precision_mode allow_fp32_to_fp16');
  });

  it('heads the per-op time column as mean CPU time, so it never reads as an NPU time', () => {
    renderReport(host, payload([{ n: 'model/dense/MatMul', t: 'MatMul', us: 31 }]));
    const headers = [...host.querySelectorAll('.npu-table th')].map(th => th.textContent);
    expect(headers).toContain('mean CPU \u00b5s');
    expect(host.querySelector('.npu-table tr.npu-row')?.textContent).toContain('31.0');
  });

  it('marks the root element with the MIME type, as JupyterLab renderers do', () => {
    renderReport(host, smallTraining());
    expect(host.getAttribute('data-mime-type')).toBe(MIME_TYPE);
  });

  it('gives the two reason columns the width left over and wraps them, with the full text on hover', () => {
    const long = 'allow_fp32_to_fp16: float32 op with a float16 AI Core kernel is cast to float16';
    const p = payload([{ n: 'model/dense/MatMul', t: 'MatMul', d1: 'float16', xr: 4 }]);
    (p.reasons as string[]).push(long);
    const view = renderReport(host, p)!;
    const specs = view.table.columnSpecs;
    const flexible = specs.filter(c => !c.width).map(c => c.key);
    expect(flexible).toEqual(['placementReason', 'precisionReason']);
    const fixedPercent = specs.filter(c => c.width?.endsWith('%')).reduce((sum, c) => sum + parseFloat(c.width!), 0);
    expect(fixedPercent).toBeLessThan(40);
    for (const key of ['index', 'engine']) {
      expect(specs.find(c => c.key === key)?.width).toMatch(/em$/);
    }
    // One device cluster: its name on every row would tell nothing, so there is no cluster column.
    expect(specs.map(c => c.key)).not.toContain('cluster');
    const cols = [...host.querySelectorAll<HTMLElement>('.npu-table colgroup col')];
    expect(cols.map(c => c.style.width)).toEqual(specs.map(c => c.width ?? ''));
    const cell = host.querySelector('.npu-table tr.npu-row td:nth-child(7)')!;
    expect(cell.getAttribute('title')).toBe(long);
    expect(cell.querySelector('.npu-wrap')?.textContent).toBe(long);
    view.select(0);
    expect(host.querySelector('.npu-details')?.textContent).toContain(long);
  });

  it('labels graph boxes name / type / dtype change, telling apart sibling ReadVariableOps', () => {
    renderReport(
      host,
      payload([
        { n: 'MatMul/ReadVariableOp', t: 'ReadVariableOp' },
        { n: 'MatMul', t: 'MatMul', d1: 'float16', xr: 3, i: [0] },
        { n: 'add/ReadVariableOp', t: 'ReadVariableOp' },
        { n: 'add', t: 'AddV2', i: [1, 2] }
      ])
    );
    const lines = (op: number) =>
      [...host.querySelectorAll(`g.npu-op[data-op="${op}"] text`)].map(t => t.textContent);
    expect(lines(0)).toEqual(['MatMul/ReadVariableOp', 'ReadVariableOp']);
    expect(lines(1)).toEqual(['MatMul', 'MatMul', 'float32 \u2192 float16']);
    expect(lines(2)).toEqual(['add/ReadVariableOp', 'ReadVariableOp']);
    expect(lines(3)).toEqual(['add', 'AddV2']);
  });
});
