/**
 * The report's labelled facts — what a run measured and where it wrote files, the first overflow or
 * non-finite value, skipped dump steps, the cost model's estimate, approximate decisions, notes —
 * built exactly as `npu_jupyter/display/facts.py` builds them for the HTML and text views, so every
 * view says the same things with the same labels (tests/display/test_view_parity.py checks all three).
 * Every value becomes a text node.
 */

import { fileLink, h, isOpenable } from './elements';

export { isOpenable };
import type { CostModel, Drift, Op, Report, RunInfo } from './schema';
import { formatBytes } from './summary';

export interface Fact {
  /** The payload field it shows, e.g. "run.dump_dir". */
  key: string;
  label: string;
  text: string;
  tone: '' | 'error' | 'warn' | 'path';
}

/** What a measured number of this report is ("CPU time of the emulation", "measured on the device"). */
export function measuredLabel(report: Report, field = 'wall_ms'): string {
  const labels = report.labels ?? {};
  return labels[field] || labels.wall_ms || 'measured';
}

/** What an estimated number is; always says "estimate". */
export function estimateLabel(report: Report): string {
  return report.labels?.est_us || 'estimated by the cost model';
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** The `top` ops with a measured time, slowest first (ties in graph order). */
export function costliest(report: Report, top = 5): number[] {
  const timed = report.ops.map((op, k) => k).filter(k => report.ops[k].us !== undefined);
  timed.sort((a, b) => report.ops[b].us! - report.ops[a].us! || a - b);
  return timed.slice(0, top);
}

function runFacts(report: Report): Fact[] {
  const run = report.run;
  if (!run) {
    return [];
  }
  const per = run.steps !== 1 ? ' per step' : '';
  const facts: Fact[] = [
    {
      key: 'run',
      label: 'Run',
      text: `backend ${run.backend} \u00b7 ${plural(run.steps, 'step')} \u00b7 ${run.wall_ms.toFixed(2)} ms${per} (${measuredLabel(report)})`,
      tone: ''
    }
  ];
  const add = (key: string, label: string, text: string, tone: Fact['tone'] = ''): void => {
    facts.push({ key, label, text, tone });
  };
  if (run.rounded_tensors !== undefined) {
    const scope = (report.functions?.length ?? 0) > 1 ? ' (in every function it calls too)' : '';
    add('run.rounded_tensors', 'Emulated', `${plural(run.rounded_tensors, 'tensor')} rounded to the plan's half precision${scope}`);
  }
  facts.push(...adapterFacts(run));
  if (run.reference_wall_ms !== null) {
    add('run.reference_wall_ms', 'float32 reference', `${run.reference_wall_ms.toFixed(2)} ms${per} (${measuredLabel(report)})`);
  }
  if (run.first_overflow) {
    add('run.first_overflow', 'First overflow (inf/NaN)', run.first_overflow, 'error');
  }
  if (run.nonfinite) {
    const n = run.nonfinite;
    const where = n.first_op + (n.step === null ? '' : ` at step ${n.step}`);
    add('run.nonfinite', 'First non-finite value', where + (n.reason ? `: ${n.reason}` : ''), 'error');
  }
  if (run.dump_dir) {
    add('run.dump_dir', 'Dump folder', run.dump_dir, 'path');
  }
  if (run.dump_steps && run.dump_steps.length > 0) {
    add('run.dump_steps', 'Dumped steps', run.dump_steps.join(', '));
  }
  for (const skip of run.dump_skipped ?? []) {
    add('run.dump_skipped', `Dump skipped step ${skip.step}`, skip.reason, 'warn');
  }
  if (run.trace_file) {
    add('run.trace_file', 'Trace (open in Perfetto)', run.trace_file, 'path');
  }
  if (run.op_summary_csv) {
    add('run.op_summary_csv', 'Op summary CSV', run.op_summary_csv, 'path');
  }
  const top = costliest(report);
  if (top.length > 0) {
    const listed = top.map(k => `${opLabel(report, report.ops[k])} ${report.ops[k].us!.toFixed(1)} \u00b5s`).join(', ');
    add('ops.us', `Costliest ops (mean per run, ${measuredLabel(report, 'us')})`, listed);
  }
  const drifted = worstDrift(report);
  if (drifted.length > 0) {
    const listed = drifted.map(k => `${opLabel(report, report.ops[k])} ${driftText(report.ops[k].dr!)}`).join('; ');
    add('ops.dr', `Largest drift vs float32 (${DRIFT_UNITS})`, listed);
  }
  return facts;
}

/** What the three drift numbers are, said wherever drift is shown (as display/facts.py says it). */
export const DRIFT_UNITS = 'abs: largest |a \u2212 b|; rel: largest |a \u2212 b| / |b|; cos: cosine similarity, 1 = same direction';

/**
 * The `top` ops that drifted most from float32 by max relative error (the sweep's "worst op" rule);
 * a non-finite error (null in the payload) ranks first.
 */
export function worstDrift(report: Report, top = 3): number[] {
  const drifted = report.ops.map((op, k) => k).filter(k => report.ops[k].dr !== undefined);
  const rel = (k: number): number => {
    const v = report.ops[k].dr!.max_rel;
    return v === null ? Number.POSITIVE_INFINITY : v;
  };
  drifted.sort((a, b) => rel(b) - rel(a) || a - b);
  return drifted.slice(0, top);
}

/** Ascend runs: the prediction label, the adapter's own output folders, GE's actual decisions. */
export function adapterFacts(run: RunInfo, rows = 50): Fact[] {
  const facts: Fact[] = [];
  const add = (key: string, label: string, text: string, tone: Fact['tone'] = ''): void => {
    facts.push({ key, label, text, tone });
  };
  if (run.prediction) {
    add('run.prediction', 'Predicted, not measured', run.prediction, 'warn');
  }
  for (const place of run.adapter_outputs ?? []) {
    add('run.adapter_outputs', place.label, place.path + (place.exists ? '' : ' (not written yet)'), 'path');
  }
  const actual = run.actual;
  if (!actual) {
    return facts;
  }
  if (actual.error) {
    add('run.actual.error', 'GE graph dump not read', actual.error, 'error');
  }
  if (actual.files.length === 0) {
    add('run.actual', 'GE graph dump', 'on, but none from this session was found yet');
    return facts;
  }
  add(
    'run.actual',
    'Actual (GE compiled graph, measured on the device)',
    `${actual.compared} ops compared, ${actual.differ} differ from the prediction, ${actual.missing} predicted device ops not in the dump`
  );
  add('run.actual.files', 'GE dump files', actual.files.join(', '), 'path');
  const ordered = [...actual.rows].sort((a, b) => Number(a.same) - Number(b.same)).slice(0, rows);
  for (const row of ordered) {
    add(
      'run.actual.rows',
      row.n,
      `predicted ${row.pe} ${row.pd.join('/')}, actual ${row.ae} ${row.ad.join('/')} (GE op ${row.ge}) [${row.same ? 'same' : 'DIFFERS'}]`,
      row.same ? '' : 'warn'
    );
  }
  return facts;
}

/** A step at least this much fixed launch cost is said to be launch-bound (display/facts.py). */
const LAUNCH_BOUND = 0.5;

/** ": 92% of it is the fixed per-op launch cost, which precision does not change", or "". */
function launchNote(cost: CostModel): string {
  const share = cost.launch_share;
  if (share === null || share < LAUNCH_BOUND) {
    return '';
  }
  const part = share >= 0.995 ? 'over 99%' : `${Math.round(share * 100)}%`; // not "100%": kernels take some time
  return `: ${part} of it is the fixed per-op launch cost, which precision does not change`;
}

function costText(cost: CostModel): string {
  const ratio = (v: number | null, why = ''): string => (v === null ? '' : ` (${v.toFixed(2)}\u00d7 float32${why})`);
  const parts: string[] = [];
  if (cost.step_ms !== null) {
    parts.push(`time ${cost.step_ms.toFixed(3)} ms${ratio(cost.step_ratio_fp32, launchNote(cost))}`);
  }
  if (cost.memory_bytes !== null) {
    parts.push(`activation + weight memory ${formatBytes(cost.memory_bytes)}${ratio(cost.memory_ratio_fp32)}`);
  }
  if (parts.length === 0) {
    return cost.basis || 'no estimate'; // nothing estimated (a refused plan): the basis says why
  }
  return parts.join(' \u00b7 ') + (cost.basis ? ` \u00b7 basis: ${cost.basis}` : '');
}

/** Python's `{:.3g}`: three significant digits, no trailing zeros. */
export function g3(v: number): string {
  return String(Number(v.toPrecision(3)));
}

/** "0.0123 abs, 0.456 rel, cos 0.9876": the drift of an op's output against float32. */
export function driftText(d: Drift): string {
  // A non-finite error is null in the payload (JSON has no inf): left out, as display/facts.py does.
  const parts: string[] = [];
  if (d.max_abs !== null) {
    parts.push(`${g3(d.max_abs)} abs`);
  }
  if (d.max_rel !== null) {
    parts.push(`${g3(d.max_rel)} rel`);
  }
  if (d.cos !== null) {
    parts.push(`cos ${d.cos.toFixed(4)}`);
  }
  return parts.join(', ');
}

/** "a \u2192 b (host \u2192 device, float32, 4.0 KiB); \u2026": each host<->device edge, the first `limit`. */
export function transfersText(report: Report, limit = 8): string {
  const items = report.transfers.slice(0, limit).map(t => {
    const arrow = t.dir === 'h2d' ? 'host \u2192 device' : 'device \u2192 host';
    return `${opLabel(report, report.ops[t.s])} \u2192 ${opLabel(report, report.ops[t.d])} (${arrow}, ${t.dt}, ${formatBytes(t.b)})`;
  });
  const more = report.transfers.length - limit;
  return items.join('; ') + (more > 0 ? ` +${more} more` : '');
}

/** "train_step (40 ops) calls gen_loss (12 ops), disc_loss (20 ops); the counts above cover all of them". */
export function functionsText(report: Report): string {
  const [head, ...called] = report.functions ?? [];
  const listed = called.map(f => `${f.label} (${plural(f.ops, 'op')})`).join(', ');
  return `${head.label} (${plural(head.ops, 'op')}) calls ${listed}; the counts above cover all of them`;
}

/** The Python name of the function an op belongs to ("" in a report on one function). */
export function opFunction(report: Report, op: Op): string {
  const functions = report.functions ?? [];
  return functions.length > 1 ? functions[op.f ?? 0].label : '';
}

/** An op's name inside its own function (a called function's ops are named `<function>/<op>`). */
export function opShortName(report: Report, op: Op): string {
  if (!op.f || !report.functions) {
    return op.n;
  }
  const prefix = `${report.functions[op.f].name}/`;
  return op.n.startsWith(prefix) ? op.n.slice(prefix.length) : op.n;
}

function planFacts(report: Report): Fact[] {
  const facts: Fact[] = [];
  const estimated = report.ops.map((op, k) => k).filter(k => report.ops[k].est_us !== undefined);
  if (estimated.length > 0) {
    estimated.sort((a, b) => report.ops[b].est_us! - report.ops[a].est_us! || a - b);
    const listed = estimated
      .slice(0, 5)
      .map(k => `${opLabel(report, report.ops[k])} ${report.ops[k].est_us!.toFixed(1)} \u00b5s`)
      .join(', ');
    facts.push({ key: 'ops.est_us', label: `Estimated costliest ops (${estimateLabel(report)}, not measured)`, text: listed, tone: '' });
  }
  if ((report.functions?.length ?? 0) > 1) {
    facts.push({ key: 'functions', label: 'Functions', text: functionsText(report), tone: '' });
  }
  if (report.transfers.length > 0) {
    facts.push({ key: 'transfers', label: plural(report.transfers.length, 'transfer'), text: transfersText(report), tone: '' });
  }
  if (report.cost_model) {
    facts.push({
      key: 'cost_model',
      label: `NPU step (${estimateLabel(report)}, not measured)`,
      text: costText(report.cost_model),
      tone: ''
    });
  }
  const approximate = report.summary.approximate;
  if (approximate) {
    facts.push({
      key: 'summary.approximate',
      label: 'Approximate',
      text:
        `${plural(approximate, 'decision')} rest on approximate op tables or the host-kept list, ` +
        'not on the published CANN tables (marked \u2248 per op)',
      tone: 'warn'
    });
  }
  if (report.predicted !== undefined) {
    facts.push({
      key: 'predicted',
      label: 'Placement and precision',
      text: report.predicted ? 'predicted by the planner, not read from the device' : "read from the device's graph dump",
      tone: ''
    });
  }
  for (const note of report.notes ?? []) {
    facts.push({ key: 'notes', label: 'Note', text: note, tone: '' });
  }
  return facts;
}

/** Every labelled line of the report, in reading order: run, problems, files, estimates, notes. */
export function reportFacts(report: Report): Fact[] {
  return [...runFacts(report), ...planFacts(report)];
}

/** An op as a line of text names it: "MatMul (in inner)" for an op of a called function. */
export function opLabel(report: Report, op: Op): string {
  return op.f ? `${opShortName(report, op)} (in ${opFunction(report, op)})` : op.n;
}

/**
 * Short per-op labels shown next to its name: overflow, approximate decision. The cost model's
 * per-op estimate is not one (every op has it): it is listed once as a fact and in the details.
 */
export function opMarks(op: Op): string[] {
  const marks: string[] = [];
  if (op.ov) {
    marks.push('\u26a0 overflow');
  }
  if (op.approximate) {
    marks.push('\u2248 approximate');
  }
  return marks;
}

/**
 * The facts as a list of labelled lines (null when the report has none). `skip` leaves out facts
 * another part of the view already shows (the lead box shows the transfers).
 */
/**
 * Makes a link open in JupyterLab (the renderer's resolver and link handler); absent outside Lab,
 * where the link keeps its plain relative href.
 */
export type PathLinker = (anchor: HTMLAnchorElement, path: string, folder: boolean) => void;

/** Facts whose path is a folder (opened in the file browser), not a file. */
const FOLDER_FACTS: ReadonlySet<string> = new Set(['run.dump_dir', 'run.adapter_outputs']);

function pathValue(path: string, folder: boolean, linker?: PathLinker): HTMLElement {
  const code = h('code', { class: 'npu-fact-value' }, path);
  if (!isOpenable(path)) {
    return code;
  }
  const anchor = fileLink(path, { class: 'npu-path-link', title: 'open in JupyterLab' }, code);
  linker?.(anchor, path, folder);
  return anchor;
}

export function factsList(report: Report, skip: readonly string[] = [], linker?: PathLinker): HTMLElement | null {
  const facts = reportFacts(report).filter(f => !skip.includes(f.key));
  if (facts.length === 0) {
    return null;
  }
  return h(
    'ul',
    { class: 'npu-facts', 'aria-label': 'what the run measured and where it wrote files' },
    ...facts.map(f =>
      h(
        'li',
        { class: `npu-fact${f.tone ? ` npu-fact-${f.tone}` : ''}`, 'data-fact': f.key },
        h('span', { class: 'npu-fact-label' }, `${f.label}: `),
        f.tone === 'path' ? pathValue(f.text, FOLDER_FACTS.has(f.key), linker) : h('span', { class: 'npu-fact-value' }, f.text)
      )
    )
  );
}
