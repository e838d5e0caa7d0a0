/**
 * One report on screen: header, summary bar, findings, the graph with its toolbar and legend,
 * the selected op's details and the op table, all wired so that selecting an op in either view
 * highlights it in both. Independent of JupyterLab so it can be tested in a plain DOM.
 */

import { clear, h } from './elements';
import { PathLinker, factsList } from './facts';
import { driftText, dtypeText, estimateLabel, measuredLabel, opMarks, stepWord } from './optext';
import { parseReport } from './parse';
import { leadBox } from './lead';
import { GraphView } from './graphview';
import { ColourMode, ENGINE_LABELS, PRECISION_LABELS, PrecisionCategory, engineClass, precisionClass } from './palette';
import { ENGINES, MIME_TYPE, Report } from './schema';
import { buildScopeTree } from './scopes';
import { findings, summaryBar } from './summary';
import { OpTable } from './tableview';

export interface ReportView {
  report: Report;
  graph: GraphView;
  table: OpTable;
  select(op: number | null): void;
  setMode(mode: ColourMode): void;
}

/** Show a payload in `host`. Returns the view, or null when the payload was refused (with a message shown). */
export function renderReport(host: HTMLElement, payload: unknown, linker?: PathLinker): ReportView | null {
  const t0 = performance.now();
  clear(host);
  host.classList.add('npu-report');
  // As JupyterLab's own renderers do: says which MIME type this output shows.
  host.setAttribute('data-mime-type', MIME_TYPE);
  const parsed = parseReport(payload);
  if (!parsed.ok) {
    host.append(h('div', { class: 'npu-message', role: 'alert' }, parsed.message));
    return null;
  }
  const view = build(host, parsed.report, linker);
  host.setAttribute('data-render-ms', (performance.now() - t0).toFixed(1));
  return view;
}

/**
 * The grey line next to the title: the facts the title does not already state (the planner's
 * titles usually name the SoC and precision mode; a custom title may not).
 */
export function subtitle(report: Report, title: string): string {
  const parts: string[] = [];
  if (report.soc && !title.includes(report.soc)) {
    parts.push(report.soc);
  }
  const mode = report.effective_precision_mode;
  if (mode && !title.includes(mode)) {
    parts.push(`precision_mode ${mode}`);
  }
  return parts.join(' \u00b7 ');
}

/** "options set: precision_mode='force_fp16', mix_compile_mode=True", as the HTML and text views write it. */
export function configText(report: Report): string {
  const shown = Object.entries(report.config).map(([k, v]) => {
    if (typeof v === 'string') {
      return `${k}='${v}'`;
    }
    return `${k}=${typeof v === 'boolean' ? (v ? 'True' : 'False') : v === null ? 'None' : String(v)}`;
  });
  return shown.length > 0 ? `options set: ${shown.join(', ')}` : 'no options set (adapter defaults)';
}

function legend(): HTMLElement {
  const item = (cls: string, label: string): HTMLElement =>
    h('span', { class: 'npu-legend-item' }, h('span', { class: `npu-swatch ${cls}` }), label);
  const precision: PrecisionCategory[] = ['to-fp16', 'to-bf16', 'to-fp32', 'changed', 'kept-float', 'non-float'];
  return h(
    'div',
    { class: 'npu-legend' },
    h('span', { class: 'npu-legend-placement' }, ...ENGINES.map(e => item(engineClass(e), ENGINE_LABELS[e]))),
    h('span', { class: 'npu-legend-precision' }, ...precision.map(p => item(precisionClass(p), PRECISION_LABELS[p])))
  );
}

function details(report: Report, op: number | null): HTMLElement[] {
  if (op === null) {
    return [h('span', { class: 'npu-hint' }, 'Click an op in the graph or the table; click a scope box to open it.')];
  }
  const o = report.ops[op];
  const field = (label: string, value: string): HTMLElement =>
    h('div', { class: 'npu-detail' }, h('span', { class: 'npu-detail-label' }, label), h('span', {}, value));
  const inputs = o.i.map(k => report.ops[k].n);
  return [
    h('div', { class: 'npu-detail-name' }, o.n),
    field('type', o.t),
    field('engine', `${ENGINE_LABELS[o.e]}${o.c >= 0 ? ` (cluster ${report.clusters[o.c].name})` : ''}`),
    field('placement', report.reasons[o.pr]),
    field('precision', `${o.rd || o.rf ? dtypeText(o) : `${o.d0 || '-'} \u2192 ${o.d1 || '-'}`}: ${report.reasons[o.xr]}`),
    field('inputs', inputs.length ? inputs.join(', ') : 'none'),
    o.us !== undefined && field('time', `${o.us.toFixed(1)} \u00b5s mean per ${stepWord(report)} (${measuredLabel(report, 'us')})`),
    o.est_us !== undefined && field('estimate', `${o.est_us.toFixed(1)} \u00b5s NPU time per ${stepWord(report)} (${estimateLabel(report)})`),
    o.dr !== undefined &&
      field('drift', driftText(o.dr) || 'not finite (inf/NaN)'),
    opMarks(o).length > 0 && field('marks', opMarks(o).join(' \u00b7 '))
  ].filter((el): el is HTMLElement => el !== false);
}

function build(host: HTMLElement, report: Report, linker?: PathLinker): ReportView {
  const tree = buildScopeTree(report);
  const info = h('div', { class: 'npu-details', 'aria-live': 'polite' });
  let selected: number | null = null;
  const select = (op: number | null): void => {
    selected = op;
    if (op !== null) {
      graph.reveal(op);
    } else {
      graph.highlight(null);
    }
    table.select(op, true);
    clear(info);
    info.append(...details(report, op));
  };
  const graph = new GraphView(report, tree, op => select(op));
  const table = new OpTable(report, op => select(op));

  const modeButton = (mode: ColourMode, label: string): HTMLButtonElement => {
    const b = h('button', { type: 'button', class: 'npu-mode jp-mod-styled', 'aria-pressed': 'false' }, label);
    b.addEventListener('click', () => setMode(mode));
    b.dataset.mode = mode;
    return b;
  };
  const modes = [modeButton('placement', 'Placement'), modeButton('precision', 'Precision')];
  const setMode = (mode: ColourMode): void => {
    host.classList.toggle('npu-mode-placement', mode === 'placement');
    host.classList.toggle('npu-mode-precision', mode === 'precision');
    modes.forEach(b => b.setAttribute('aria-pressed', String(b.dataset.mode === mode)));
  };
  const tool = (label: string, title: string, action: () => void): HTMLButtonElement => {
    const b = h('button', { type: 'button', class: 'npu-tool jp-mod-styled', title, 'aria-label': title }, label);
    b.addEventListener('click', action);
    return b;
  };
  const toolbar = h(
    'div',
    { class: 'npu-toolbar' },
    h('span', { class: 'npu-toolbar-label' }, 'Colour by'),
    ...modes,
    tool('\u2212', 'zoom out', () => graph.setZoom(graph.zoomLevel / 1.25)),
    tool('+', 'zoom in', () => graph.setZoom(graph.zoomLevel * 1.25)),
    tool('fit', 'fit the whole graph in view', () => graph.fit()),
    tool('collapse', 'collapse all scopes', () => {
      graph.collapseAll();
      graph.highlight(selected);
    }),
    legend(),
    graph.note
  );
  const title = report.title || (report.kind === 'run' ? 'Run report' : 'Plan');
  const sub = subtitle(report, title);
  const header = h(
    'div',
    { class: 'npu-header' },
    h('span', { class: 'npu-title' }, title),
    sub && h('span', { class: 'npu-subtitle' }, sub),
    h('span', { class: 'npu-config' }, configText(report))
  );
  // What matters first: the run's facts and files, the host ops and transfers, the precision
  // changes, then errors and warnings; the graph and the full table follow.
  host.append(header, summaryBar(report));
  for (const part of [factsList(report, ['transfers'], linker), leadBox(report, op => select(op)), findings(report)]) {
    if (part) {
      host.append(part);
    }
  }
  host.append(toolbar, graph.node, info, table.node);
  // Once the view has its size, open the graph where to look (the first overflow, or the lead op of
  // a drawing wider than the cell).
  if (typeof requestAnimationFrame === 'function') {
    requestAnimationFrame(() => graph.settleWhenShown());
  }
  setMode('placement');
  info.append(...details(report, null));
  return { report, graph, table, select, setMode };
}
