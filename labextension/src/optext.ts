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

/**
 * `float32 → float16`; `float32 (reads float16)` for input-only lowering; `inputs float16, output int64`
 * for an op reading what its producers lowered (not a change of its own); else the dtype.
 */
export function dtypeText(op: Op): string {
  if (op.d0 !== op.d1) {
    return `${op.d0 || '-'} \u2192 ${op.d1 || '-'}`;
  }
  if (op.rd) {
    return op.d0 ? `${op.d0} (reads ${op.rd})` : `reads ${op.rd}`; // an op without outputs only reads
  }
  if (op.rf) {
    return op.d0 ? `inputs ${op.rf}, output ${op.d0}` : `inputs ${op.rf}`;
  }
  return op.d1 || '-';
}

/** What a measured number of this report is ("wall-clock time of the emulation on this CPU", \u2026). */
export function measuredLabel(report: Report, field = 'wall_ms'): string {
  const labels = report.labels ?? {};
  return labels[field] || labels.wall_ms || 'measured';
}

/**
 * One word said next to each per-op time where it stands ("mean CPU \u00b5s"): whose clock it is. The
 * emulator times ops on this CPU, never on an NPU; the ascend backend puts no per-op times in its report
 * (the adapter's profiling output has the device's), so it is never called a device time here (as
 * `time_tag` in _display/facts.py).
 */
export function timeTag(report: Report): string {
  return (report.run?.backend ?? 'emulator') === 'emulator' ? 'CPU' : 'measured';
}

/** What a report counts: a traced function's calls, else a run graph's steps (as `step_word` in facts.py). */
export function stepWord(report: Report): string {
  // run.unit says it; payloads written before it fall back to the call tree (absent for a function calling none).
  return report.run?.unit ?? ((report.functions ?? []).length > 0 ? 'call' : 'step');
}

/**
 * Where a function's calls came from when its title does not say (`run.calls_from`), as the Python
 * views' "Run" line says it: "6 during Keras fit (validation), 3 in Keras evaluate", or "all during Keras
 * fit (validation)"; "" when the payload has no split (all came from where the title says).
 */
export function callsSplit(report: Report): string {
  const split = report.run?.calls_from ?? [];
  if (split.length === 1) {
    return `${report.run!.steps > 1 ? 'all ' : ''}${split[0].where}`;
  }
  return split.map(part => `${part.calls} ${part.where}`).join(', ');
}

/**
 * The run's time with what it is, as the Python views' "Run" line says it: "12.3 ms (mean per step over
 * 4 steps: \u2026; wall-clock time of the emulation on this CPU)", "per step" said when the label does not.
 */
export function wallTimeText(report: Report): { value: string; label: string } {
  const run = report.run!;
  const label = measuredLabel(report);
  const per = run.steps !== 1 && !label.startsWith('mean per ') ? ` per ${stepWord(report)}` : '';
  return { value: run.wall_ms.toFixed(1), label: `ms${per} (${label})` };
}

/** What an estimated number is; always says "estimate". */
export function estimateLabel(report: Report): string {
  return report.labels?.est_us || 'estimated by the cost model';
}

/** What the drift figures are, said wherever drift is shown (as _display/drift.py says it). */
export const DRIFT_UNITS =
  'rel. RMSE: root mean square of a \u2212 b over that of the float32 value b, the figure ops are ranked by; ' +
  'max abs: largest |a \u2212 b|; cos: cosine similarity, 1 = same direction; step: where the op drifted most';

/**
 * The ops the report's "Largest drift" line lists, worst first, as Python ranked them
 * (`run.drift_worst`, _display/drift.py: no zero drift, no copy of a listed op); empty in a payload
 * written before it existed.
 */
export function worstDrift(report: Report): number[] {
  return (report.run?.drift_worst ?? []).filter(k => k < report.ops.length && report.ops[k].dr !== undefined);
}

/** Python's `{:.3g}`: three significant digits, no trailing zeros, an exponent below 1e-4 or from 1e3. */
export function g3(v: number): string {
  if (v === 0 || !Number.isFinite(v)) {
    return String(v);
  }
  const [mantissa, power] = v.toExponential(2).split('e');
  const exponent = Number(power);
  if (exponent < -4 || exponent >= 3) {
    const digits = mantissa.includes('.') ? mantissa.replace(/0+$/, '').replace(/\.$/, '') : mantissa;
    return `${digits}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  return String(Number(v.toPrecision(3)));
}

/** Said of a cancelled reference (_runtime/observe/drift_ranking.py CANCELLED_NOTE says the same). */
export const CANCELLED_NOTE =
  "reference \u2248 0 next to its inputs (cancellation): drift measured against the inputs' scale";
/** Said of an op that computes only from cancelled values (drift_ranking.py FROM_CANCELLED_NOTE). */
export const FROM_CANCELLED_NOTE = 'computes from a cancelled value: its float32 reference is rounding noise';
/** Said of an op that may read a cancelled output of a multi-output copy (drift_ranking.py MAYBE_CANCELLED_NOTE). */
export const MAYBE_CANCELLED_NOTE =
  'may compute from a cancelled value (reads a multi-output copy of one): ranked after the others';

/** A reference RMS below float16's smallest normal number (drift_ranking.py NEAR_ZERO). */
export const NEAR_ZERO = 2 ** -14;
/** Said of an op whose float32 values are ≈ 0 (drift_ranking.py NEAR_ZERO_NOTE says the same). */
export const NEAR_ZERO_NOTE =
  "float32 values \u2248 0 (RMS below 6.1e-05, float16's smallest normal): a relative error of values this " +
  'small is large for a tiny absolute error (max abs); ranked after ops with values in range';

/** Values \u2248 0 whose figure is their own finite, non-zero relative RMSE, as drift_ranking.py near_zero decides. */
function nearZero(d: Drift): boolean {
  const own = d.ref_rms;
  if (own === undefined || own === null || d.rel_rmse === undefined || d.rel_rmse === null || d.rel_rmse === 0) {
    return false; // no drift (a constant of zeros matches float32 exactly) is never a tiny value's error
  }
  return own < NEAR_ZERO && d.from_cancelled !== true && (d.in_rel === undefined || d.in_rel === null);
}

/** "rel. RMSE 0.0123, max abs 0.000784, cos 0.9999, step 2": one op's worst drift from float32. */
export function driftText(d: Drift): string {
  // A non-finite figure is null in the payload (JSON has no inf): said, as _display/drift.py does.
  if (d.rel_rmse === undefined) {
    return olderDriftText(d);
  }
  let parts = [d.rel_rmse === null ? 'not finite (inf/NaN)' : `rel. RMSE ${g3(d.rel_rmse)}`];
  if (d.in_rel !== undefined && d.in_rel !== null) {
    // A cancelled reference: the figure it is ranked by first, its own beside it (as _display/drift.py).
    const own = d.rel_rmse === null ? '' : `; ${g3(d.rel_rmse)} against its own reference`;
    parts = [`rel. RMSE ${g3(d.in_rel)} against its inputs' scale (${CANCELLED_NOTE}${own})`];
  }
  if (d.max_abs !== null) {
    parts.push(`max abs ${g3(d.max_abs)}`);
  }
  if (d.cos !== null) {
    parts.push(`cos ${d.cos.toFixed(4)}`);
  }
  if (d.step !== undefined) {
    parts.push(`step ${d.step}`);
  }
  if (d.from_cancelled === true) {
    parts.push(FROM_CANCELLED_NOTE);
  }
  if (d.maybe_cancelled === true) {
    parts.push(MAYBE_CANCELLED_NOTE);
  }
  if (nearZero(d)) {
    parts.push(NEAR_ZERO_NOTE);
  }
  return parts.join(', ');
}

/** A row written before the relative RMSE existed reads as it did: largest abs and rel error, cosine. */
function olderDriftText(d: Drift): string {
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
  return parts.join(', ') || 'not finite (inf/NaN)';
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
