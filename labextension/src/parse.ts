/**
 * The validating parser of the report payload: checks a payload against the types of `schema.ts`
 * (generated from npu_jupyter/_display/report_schema.json; docs/report-schema.md).
 *
 * The payload comes from a notebook file, which anyone can edit, so nothing in it is trusted:
 * every field is checked for its type and every index for its range before a view reads it.
 * Parsing never throws; it returns either a report or one message saying what was wrong.
 */

import {
  Actual,
  ActualRow,
  AdapterOutput,
  CallsFrom,
  Cluster,
  CostModel,
  Drift,
  DumpSkip,
  ENGINES,
  Engine,
  Fact,
  FunctionInfo,
  Labels,
  NonFinite,
  OverflowCheck,
  Op,
  Report,
  RunInfo,
  SCHEMA_NAME,
  SUPPORTED_VERSIONS,
  Summary,
  TONES,
  Tone,
  Transfer
} from './schema';

export type ParseResult =
  | { ok: true; report: Report }
  | { ok: false; message: string; unsupportedVersion?: number };

/** Thrown inside the parser only; `parseReport` turns it into a message. */
class PayloadError extends Error {}

type Json = unknown;

function fail(path: string, expected: string): never {
  throw new PayloadError(`${path}: expected ${expected}`);
}

function isObject(v: Json): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function obj(v: Json, path: string): Record<string, Json> {
  return isObject(v) ? v : fail(path, 'an object');
}

function str(v: Json, path: string): string {
  return typeof v === 'string' ? v : fail(path, 'a string');
}

function num(v: Json, path: string): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : fail(path, 'a finite number');
}

function count(v: Json, path: string): number {
  return Number.isInteger(v) && (v as number) >= 0 ? (v as number) : fail(path, 'a non-negative integer');
}

function nullable<T>(v: Json, path: string, read: (v: Json, p: string) => T): T | null {
  return v === null || v === undefined ? null : read(v, path);
}

function bool(v: Json, path: string): boolean {
  return typeof v === 'boolean' ? v : fail(path, 'true or false');
}

function arr<T>(v: Json, path: string, read: (item: Json, p: string) => T): T[] {
  if (!Array.isArray(v)) {
    fail(path, 'an array');
  }
  return v.map((item, k) => read(item, `${path}[${k}]`));
}

/** An index into a table of `size` entries; `allowMinusOne` for "none" (host ops' cluster). */
function index(v: Json, path: string, size: number, allowMinusOne = false): number {
  if (!Number.isInteger(v)) {
    fail(path, 'an integer index');
  }
  const k = v as number;
  if ((allowMinusOne && k === -1) || (k >= 0 && k < size)) {
    return k;
  }
  return fail(path, `an index in 0..${size - 1}${allowMinusOne ? ' or -1' : ''}, got ${k}`);
}

function engine(v: Json, path: string): Engine {
  return ENGINES.includes(v as Engine) ? (v as Engine) : fail(path, `one of ${ENGINES.join(', ')}`);
}

function summary(v: Json, path: string): Summary {
  const o = obj(v, path);
  return {
    ops: count(o.ops, `${path}.ops`),
    ai_core: count(o.ai_core, `${path}.ai_core`),
    ai_cpu: count(o.ai_cpu, `${path}.ai_cpu`),
    host: count(o.host, `${path}.host`),
    precision_changed: count(o.precision_changed, `${path}.precision_changed`),
    clusters: count(o.clusters, `${path}.clusters`),
    transfers: count(o.transfers, `${path}.transfers`),
    transfer_bytes: nullable(o.transfer_bytes, `${path}.transfer_bytes`, count),
    ...optional(o.approximate, `${path}.approximate`, count, 'approximate')
  };
}

/** `{key: value}` when the field is present, `{}` when absent or null: optional fields stay absent. */
function optional<K extends string, T>(v: Json, path: string, read: (v: Json, p: string) => T, key: K): Partial<Record<K, T>> {
  return v === undefined || v === null ? {} : ({ [key]: read(v, path) } as Partial<Record<K, T>>);
}

function dumpSkip(v: Json, path: string): DumpSkip {
  const o = obj(v, path);
  return { step: count(o.step, `${path}.step`), reason: str(o.reason, `${path}.reason`) };
}

function callsFrom(v: Json, path: string): CallsFrom {
  const o = obj(v, path);
  return { where: str(o.where, `${path}.where`), calls: count(o.calls, `${path}.calls`) };
}

function adapterOutput(v: Json, path: string): AdapterOutput {
  const o = obj(v, path);
  return { label: str(o.label, `${path}.label`), path: str(o.path, `${path}.path`), exists: o.exists === true };
}

function actualRow(v: Json, path: string): ActualRow {
  const o = obj(v, path);
  return {
    n: str(o.n, `${path}.n`),
    pe: str(o.pe, `${path}.pe`),
    ae: str(o.ae, `${path}.ae`),
    pd: arr(o.pd, `${path}.pd`, str),
    ad: arr(o.ad, `${path}.ad`, str),
    ge: str(o.ge ?? '', `${path}.ge`),
    same: o.same === true
  };
}

function actual(v: Json, path: string): Actual {
  const o = obj(v, path);
  return {
    files: arr(o.files, `${path}.files`, str),
    rows: arr(o.rows, `${path}.rows`, actualRow),
    compared: count(o.compared, `${path}.compared`),
    differ: count(o.differ, `${path}.differ`),
    missing: count(o.missing, `${path}.missing`),
    error: nullable(o.error ?? null, `${path}.error`, str)
  };
}

function nonFinite(v: Json, path: string): NonFinite {
  const o = obj(v, path);
  return {
    first_op: str(o.first_op, `${path}.first_op`),
    step: nullable(o.step, `${path}.step`, count),
    reason: str(o.reason ?? '', `${path}.reason`)
  };
}

function overflowCheck(v: Json, path: string): OverflowCheck {
  const o = obj(v, path);
  return {
    checked: count(o.checked, `${path}.checked`),
    mode: str(o.mode, `${path}.mode`),
    storage: arr(o.storage, `${path}.storage`, str)
  };
}

function costModel(v: Json, path: string): CostModel {
  const o = obj(v, path);
  return {
    step_ms: nullable(o.step_ms, `${path}.step_ms`, num),
    memory_bytes: nullable(o.memory_bytes, `${path}.memory_bytes`, count),
    step_ratio_fp32: nullable(o.step_ratio_fp32, `${path}.step_ratio_fp32`, num),
    memory_ratio_fp32: nullable(o.memory_ratio_fp32, `${path}.memory_ratio_fp32`, num),
    launch_share: nullable(o.launch_share ?? null, `${path}.launch_share`, num),
    basis: str(o.basis ?? '', `${path}.basis`)
  };
}

function labels(v: Json, path: string): Labels {
  const o = obj(v, path);
  return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, str(x, `${path}.${k}`)]));
}

function tone(v: Json, path: string): Tone {
  return TONES.includes(v as Tone) ? (v as Tone) : fail(path, `one of ${TONES.map(t => JSON.stringify(t)).join(', ')}`);
}

function fact(v: Json, path: string): Fact {
  const o = obj(v, path);
  return {
    key: str(o.key, `${path}.key`),
    label: str(o.label, `${path}.label`),
    text: str(o.text, `${path}.text`),
    tone: tone(o.tone ?? '', `${path}.tone`)
  };
}

/** The changed options: each value a boolean, number, string or null (the payload writes others as text). */
function config(v: Json, path: string): Record<string, boolean | number | string | null> {
  const o = obj(v, path);
  const scalar = (x: Json, p: string): boolean | number | string | null =>
    x === null || typeof x === 'boolean' || typeof x === 'string' || typeof x === 'number' ? x : fail(p, 'a boolean, number, string or null');
  return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, scalar(x, `${path}.${k}`)]));
}

function cluster(v: Json, path: string): Cluster {
  const o = obj(v, path);
  return { name: str(o.name, `${path}.name`), size: count(o.size, `${path}.size`) };
}

function drift(v: Json, path: string): Drift {
  const o = obj(v, path);
  return {
    // An overflowed op's errors are inf/NaN, written as null: the report must still render.
    max_abs: nullable(o.max_abs, `${path}.max_abs`, num),
    max_rel: nullable(o.max_rel, `${path}.max_rel`, num),
    cos: nullable(o.cos, `${path}.cos`, num),
    ...optional(o.rmse, `${path}.rmse`, num, 'rmse'),
    ...optional(o.accumulated_rel, `${path}.accumulated_rel`, num, 'accumulated_rel'),
    // null is a figure here (not finite: the op went inf/NaN); absent is a row written before it existed
    ...(o.rel_rmse === undefined ? {} : { rel_rmse: nullable(o.rel_rmse, `${path}.rel_rmse`, num) }),
    ...optional(o.step, `${path}.step`, count, 'step'),
    ...(o.ref_rms === undefined ? {} : { ref_rms: nullable(o.ref_rms, `${path}.ref_rms`, num) }),
    ...optional(o.size, `${path}.size`, num, 'size'),
    // set only on a cancelled reference (its figure against its inputs' scale, null when not finite)
    ...(o.in_rel === undefined ? {} : { in_rel: nullable(o.in_rel, `${path}.in_rel`, num) }),
    ...optional(o.from_cancelled, `${path}.from_cancelled`, bool, 'from_cancelled'),
    ...optional(o.maybe_cancelled, `${path}.maybe_cancelled`, bool, 'maybe_cancelled')
  };
}

function functionInfo(v: Json, path: string): FunctionInfo {
  const o = obj(v, path);
  return { name: str(o.name, `${path}.name`), label: str(o.label, `${path}.label`), ops: count(o.ops, `${path}.ops`) };
}

function op(v: Json, path: string, sizes: { ops: number; reasons: number; clusters: number; functions: number }): Op {
  const o = obj(v, path);
  const result: Op = {
    n: str(o.n, `${path}.n`),
    t: str(o.t, `${path}.t`),
    e: engine(o.e, `${path}.e`),
    d0: str(o.d0, `${path}.d0`),
    d1: str(o.d1, `${path}.d1`),
    c: index(o.c, `${path}.c`, sizes.clusters, true),
    pr: index(o.pr, `${path}.pr`, sizes.reasons),
    xr: index(o.xr, `${path}.xr`, sizes.reasons),
    i: arr(o.i, `${path}.i`, (x, p) => index(x, p, sizes.ops))
  };
  if (o.rd !== undefined && o.rd !== null) {
    result.rd = str(o.rd, `${path}.rd`);
  }
  if (o.rf !== undefined && o.rf !== null) {
    result.rf = str(o.rf, `${path}.rf`);
  }
  if (o.us !== undefined && o.us !== null) {
    result.us = num(o.us, `${path}.us`);
  }
  if (o.dr !== undefined && o.dr !== null) {
    result.dr = drift(o.dr, `${path}.dr`);
  }
  if (o.ov !== undefined && o.ov !== null) {
    result.ov = bool(o.ov, `${path}.ov`);
  }
  Object.assign(
    result,
    optional(o.est_us, `${path}.est_us`, num, 'est_us'),
    optional(o.approximate, `${path}.approximate`, bool, 'approximate'),
    optional(o.f, `${path}.f`, (x, p) => index(x, p, sizes.functions), 'f')
  );
  return result;
}

function transfer(v: Json, path: string, opCount: number): Transfer {
  const o = obj(v, path);
  const dir = o.dir === 'h2d' || o.dir === 'd2h' ? o.dir : fail(`${path}.dir`, '"h2d" or "d2h"');
  const out: Transfer = {
    s: index(o.s, `${path}.s`, opCount),
    d: index(o.d, `${path}.d`, opCount),
    dt: str(o.dt, `${path}.dt`),
    b: nullable(o.b, `${path}.b`, count),
    dir
  };
  if (o.o !== undefined) {
    out.o = count(o.o, `${path}.o`); // absent in reports written before the field existed
  }
  return out;
}

function runInfo(v: Json, path: string): RunInfo {
  const o = obj(v, path);
  return {
    backend: str(o.backend, `${path}.backend`),
    steps: count(o.steps, `${path}.steps`),
    ...optional(o.unit, `${path}.unit`, (x, p) => (x === 'step' || x === 'call' ? x : fail(p, '"step" or "call"')), 'unit'),
    wall_ms: num(o.wall_ms, `${path}.wall_ms`),
    reference_wall_ms: nullable(o.reference_wall_ms, `${path}.reference_wall_ms`, num),
    first_overflow: nullable(o.first_overflow, `${path}.first_overflow`, str),
    dump_dir: nullable(o.dump_dir, `${path}.dump_dir`, str),
    trace_file: nullable(o.trace_file, `${path}.trace_file`, str),
    op_summary_csv: nullable(o.op_summary_csv, `${path}.op_summary_csv`, str),
    ...optional(o.dump_steps, `${path}.dump_steps`, (x, p) => arr(x, p, count), 'dump_steps'),
    ...optional(o.dump_skipped, `${path}.dump_skipped`, (x, p) => arr(x, p, dumpSkip), 'dump_skipped'),
    ...optional(o.nonfinite, `${path}.nonfinite`, nonFinite, 'nonfinite'),
    ...optional(o.overflow_check, `${path}.overflow_check`, overflowCheck, 'overflow_check'),
    ...optional(o.rounded_tensors, `${path}.rounded_tensors`, count, 'rounded_tensors'),
    ...optional(o.calls_from, `${path}.calls_from`, (x, p) => arr(x, p, callsFrom), 'calls_from'),
    ...optional(o.drift_worst, `${path}.drift_worst`, (x, p) => arr(x, p, count), 'drift_worst'),
    // ascend backend only; absent in payloads written before it: read as null / empty
    prediction: nullable(o.prediction, `${path}.prediction`, str),
    adapter_outputs: arr(o.adapter_outputs ?? [], `${path}.adapter_outputs`, adapterOutput),
    actual: nullable(o.actual, `${path}.actual`, actual)
  };
}

function reportV1(o: Record<string, Json>): Report {
  const kind = o.kind === 'plan' || o.kind === 'run' ? o.kind : fail('kind', '"plan" or "run"');
  const reasons = arr(o.reasons, 'reasons', str);
  const clusters = arr(o.clusters, 'clusters', cluster);
  if (!Array.isArray(o.ops)) {
    fail('ops', 'an array');
  }
  const functions = o.functions === undefined || o.functions === null ? undefined : arr(o.functions, 'functions', functionInfo);
  const sizes = { ops: o.ops.length, reasons: reasons.length, clusters: clusters.length, functions: functions?.length ?? 0 };
  const ops = o.ops.map((item, k) => op(item, `ops[${k}]`, sizes));
  const report: Report = {
    schema: SCHEMA_NAME,
    version: 1,
    kind,
    title: str(o.title, 'title'),
    soc: str(o.soc, 'soc'),
    config: config(o.config, 'config'),
    effective_precision_mode: str(o.effective_precision_mode, 'effective_precision_mode'),
    summary: summary(o.summary, 'summary'),
    reasons,
    clusters,
    ops,
    transfers: arr(o.transfers, 'transfers', (t, p) => transfer(t, p, ops.length)),
    warnings: arr(o.warnings ?? [], 'warnings', str),
    errors: arr(o.errors ?? [], 'errors', str),
    truncated: o.truncated === undefined ? false : bool(o.truncated, 'truncated'),
    // Computed once in Python and shipped; a payload written before them has none.
    facts: arr(o.facts ?? [], 'facts', fact)
  };
  if (o.run !== undefined && o.run !== null) {
    report.run = runInfo(o.run, 'run');
  }
  Object.assign(
    report,
    optional(o.notes, 'notes', (x, p) => arr(x, p, str), 'notes'),
    optional(o.predicted, 'predicted', bool, 'predicted'),
    optional(o.cost_model, 'cost_model', costModel, 'cost_model'),
    optional(o.labels, 'labels', labels, 'labels')
  );
  if (functions !== undefined) {
    report.functions = functions;
  }
  return report;
}

/**
 * Check a payload and return it typed, or say in one message what is wrong with it.
 *
 * An unknown `version` is reported separately (with `unsupportedVersion`) so the view can show
 * the plain "unsupported report version N" message the schema asks for.
 */
export function parseReport(payload: unknown): ParseResult {
  if (!isObject(payload)) {
    return { ok: false, message: 'report payload: expected a JSON object' };
  }
  if (payload.schema !== SCHEMA_NAME) {
    return { ok: false, message: `report payload: "schema" must be "${SCHEMA_NAME}"` };
  }
  const version = payload.version;
  if (typeof version !== 'number' || !SUPPORTED_VERSIONS.includes(version)) {
    const shown = typeof version === 'number' ? String(version) : JSON.stringify(version ?? null);
    return {
      ok: false,
      message: `unsupported report version ${shown} (this extension reads version ${SUPPORTED_VERSIONS.join(', ')})`,
      unsupportedVersion: typeof version === 'number' ? version : undefined
    };
  }
  try {
    return { ok: true, report: reportV1(payload) };
  } catch (err) {
    if (err instanceof PayloadError) {
      return { ok: false, message: `invalid report payload: ${err.message}` };
    }
    throw err;
  }
}
