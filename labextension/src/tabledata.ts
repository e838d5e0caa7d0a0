/**
 * Which ops the table shows and in what order: filtering and sorting as pure functions over
 * op indices, so they are tested without a browser and the view only renders visible rows.
 */

import { changedPrecision } from './optext';
import type { Drift, Engine, Op, Report } from './schema';
import { leadRanks } from './lead';
import { precisionCategory } from './palette';

export type SortKey =
  | 'interest'
  | 'index'
  | 'name'
  | 'function'
  | 'type'
  | 'engine'
  | 'precision'
  | 'cluster'
  | 'placementReason'
  | 'precisionReason'
  | 'time'
  | 'drift';

export interface TableQuery {
  /** Case-insensitive words; a row matches when every word occurs in one of its texts. */
  text: string;
  engine: Engine | '';
  changedOnly: boolean;
  /** Only the ops of this function of a call tree (an index into `report.functions`), or -1 for all. */
  fn: number;
  sort: SortKey;
  descending: boolean;
}

/**
 * The first view sorts by interest (host ops and transfer ends, then precision changes; see
 * `leadRanks`), so a mixed-computing run's host ops are the first rows, not rows 293-295.
 */
export const DEFAULT_QUERY: TableQuery = {
  text: '',
  engine: '',
  changedOnly: false,
  fn: -1,
  sort: 'interest',
  descending: false
};

/** The Python name of an op's function in a report on a call tree, else "". */
export function functionLabel(report: Report, op: Op): string {
  const functions = report.functions ?? [];
  return functions.length > 1 ? functions[op.f ?? 0].label : '';
}

function clusterName(report: Report, op: Op): string {
  return op.c >= 0 ? report.clusters[op.c].name : '';
}

/** The texts a filter word is matched against, lower-cased once per report. */
export function searchTexts(report: Report): string[] {
  return report.ops.map(op =>
    [op.n, functionLabel(report, op), op.t, op.e, op.d0, op.d1, clusterName(report, op), report.reasons[op.pr], report.reasons[op.xr], op.approximate ? 'approximate' : '']
      .join('\u0001')
      .toLowerCase()
  );
}

type Cmp = (a: number, b: number) => number;

/**
 * The figure an op's drift is shown and ranked by: relative RMSE (against its inputs' scale when its reference
 * cancels, `in_rel`), or max rel on rows written before it.
 */
function driftFigure(d: Drift): number | null {
  if (d.in_rel !== undefined) {
    return d.in_rel;
  }
  return d.rel_rmse === undefined ? d.max_rel : d.rel_rmse;
}

function byText(f: (op: Op) => string, report: Report): Cmp {
  return (a, b) => {
    const x = f(report.ops[a]);
    const y = f(report.ops[b]);
    return x < y ? -1 : x > y ? 1 : 0;
  };
}

/** Numeric sort where ops without the measurement always go last, in either direction. */
function byNumber(f: (op: Op) => number | undefined, report: Report, descending: boolean): Cmp {
  return (a, b) => {
    const x = f(report.ops[a]);
    const y = f(report.ops[b]);
    if (x === undefined || y === undefined) {
      return x === y ? 0 : x === undefined ? (descending ? -1 : 1) : descending ? 1 : -1;
    }
    return x - y;
  };
}

function comparator(report: Report, key: SortKey, descending: boolean): Cmp {
  switch (key) {
    case 'interest': {
      const ranks = leadRanks(report);
      return (a, b) => ranks[a] - ranks[b];
    }
    case 'index':
      return (a, b) => a - b;
    case 'name':
      return byText(op => op.n, report);
    case 'function':
      return byNumber(op => op.f ?? 0, report, descending);
    case 'type':
      return byText(op => op.t, report);
    case 'engine':
      return byText(op => op.e, report);
    case 'precision':
      return byText(op => `${precisionCategory(op)}\u0001${op.d0}\u0001${op.d1}`, report);
    case 'cluster':
      return byNumber(op => (op.c >= 0 ? op.c : undefined), report, descending);
    case 'placementReason':
      return byText(op => report.reasons[op.pr], report);
    case 'precisionReason':
      return byText(op => report.reasons[op.xr], report);
    case 'time':
      return byNumber(op => op.us, report, descending);
    case 'drift':
      // By the figure the column shows: relative RMSE (the report's ranking, _runtime/observe/drift_ranking.py),
      // max rel only for rows written before it. A non-finite error (null) is the largest drift of all.
      return byNumber(op => (op.dr === undefined ? undefined : driftFigure(op.dr) ?? Number.POSITIVE_INFINITY), report, descending);
  }
}

/**
 * Indices of the ops matching `query`, sorted by its key. Ties keep topological order in both
 * directions so the table does not shuffle when the sort direction flips.
 */
export function selectRows(report: Report, query: TableQuery, texts: string[] = searchTexts(report)): number[] {
  const words = query.text.toLowerCase().split(/\s+/).filter(w => w.length > 0);
  const rows: number[] = [];
  report.ops.forEach((op, k) => {
    if (query.engine && op.e !== query.engine) {
      return;
    }
    if (query.changedOnly && !changedPrecision(op)) {
      return;
    }
    if (query.fn >= 0 && (op.f ?? 0) !== query.fn) {
      return;
    }
    if (words.every(w => texts[k].includes(w))) {
      rows.push(k);
    }
  });
  const cmp = comparator(report, query.sort, query.descending);
  const sign = query.descending ? -1 : 1;
  rows.sort((a, b) => sign * cmp(a, b) || a - b);
  return rows;
}
