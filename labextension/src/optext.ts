/**
 * How one op's numbers and marks read in the table, the details pane and the summary chips.
 *
 * The report's labelled fact lines are computed in Python and shipped in the payload (`facts.ts`
 * draws them); these are the per-op texts only the JupyterLab view draws, with the same wording as
 * `npu_jupyter/_display/facts.py` uses in the HTML and text tables (tests/display/test_view_parity.py).
 */

import type { Drift, Op, Report } from './schema';

/** The device reads or writes the op's data in another dtype than the graph declares. */
export function changedPrecision(op: Op): boolean {
  return op.d0 !== op.d1 || !!op.rd;
}

/** `float32 → float16`; `float32 (reads float16)` for input-only lowering; else the dtype. */
export function dtypeText(op: Op): string {
  if (op.d0 !== op.d1) {
    return `${op.d0 || '-'} \u2192 ${op.d1 || '-'}`;
  }
  if (op.rd) {
    return op.d0 ? `${op.d0} (reads ${op.rd})` : `reads ${op.rd}`; // an op without outputs only reads
  }
  return op.d1 || '-';
}

/** What a measured number of this report is ("CPU time of the emulation", "measured on the device"). */
export function measuredLabel(report: Report, field = 'wall_ms'): string {
  const labels = report.labels ?? {};
  return labels[field] || labels.wall_ms || 'measured';
}

/**
 * One word said next to each per-op time where it stands ("mean CPU \u00b5s"): whose clock it is. The
 * emulator times ops on this CPU, never on an NPU (as `time_tag` in _display/facts.py).
 */
export function timeTag(report: Report): string {
  const backend = report.run?.backend ?? 'emulator';
  return backend === 'emulator' ? 'CPU' : backend === 'ascend' ? 'device' : 'measured';
}

/** What an estimated number is; always says "estimate". */
export function estimateLabel(report: Report): string {
  return report.labels?.est_us || 'estimated by the cost model';
}

/** What the three drift numbers are, said wherever drift is shown (as _display/facts.py says it). */
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

/** Python's `{:.3g}`: three significant digits, no trailing zeros. */
export function g3(v: number): string {
  return String(Number(v.toPrecision(3)));
}

/** "0.0123 abs, 0.456 rel, cos 0.9876": the drift of an op's output against float32. */
export function driftText(d: Drift): string {
  // A non-finite error is null in the payload (JSON has no inf): left out, as _display/facts.py does.
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

/** An op's name inside its own function (a called function's ops are named `<function>/<op>`). */
export function opShortName(report: Report, op: Op): string {
  if (!op.f || !report.functions) {
    return op.n;
  }
  const prefix = `${report.functions[op.f].name}/`;
  return op.n.startsWith(prefix) ? op.n.slice(prefix.length) : op.n;
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
