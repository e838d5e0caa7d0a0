/**
 * The first thing under the summary: what a person porting a model must look at, in that order —
 * the ops that went inf/NaN, the ops kept on the host, the AI CPU ops and the host<->device
 * transfers, then the precision changes. A large graph's table would put them hundreds of rows down and its drawing
 * would show collapsed scopes; here they are named at once, and clicking one selects it everywhere.
 */

import { h } from './elements';
import { plural } from './labels';
import { factText } from './facts';
import { changedPrecision } from './optext';
import type { Report } from './schema';

/** Host ops that compute (not the constants and placeholders every graph keeps on the host). */
export const HOST_PLUMBING: ReadonlySet<string> = new Set(['Const', 'Placeholder', 'PlaceholderWithDefault', 'NoOp']);

/** Entries shown per list before "+N more"; the table (sorted the same way) has the rest. */
export const LEAD_ITEMS = 8;

/** Ops kept on the host, the ones that compute first, in graph order within each group. */
export function hostOps(report: Report): number[] {
  const host = report.ops.map((op, k) => k).filter(k => report.ops[k].e === 'HOST');
  const computing = host.filter(k => !HOST_PLUMBING.has(report.ops[k].t));
  return [...computing, ...host.filter(k => HOST_PLUMBING.has(report.ops[k].t))];
}

/** Host ops that compute (a mixed-computing run's point), in graph order. */
export function hostComputeOps(report: Report): number[] {
  return hostOps(report).filter(k => !HOST_PLUMBING.has(report.ops[k].t));
}

/** Ops on AI CPU: each splits the device graph and runs far slower than on the AI Core. */
export function aiCpuOps(report: Report): number[] {
  return report.ops.map((op, k) => k).filter(k => report.ops[k].e === 'AI_CPU');
}

/** Ops whose output went inf/NaN, in graph order (the first one is where to look). */
export function overflowOps(report: Report): number[] {
  return report.ops.map((op, k) => k).filter(k => report.ops[k].ov === true);
}

/** Ops whose dtype the decision changed, in graph order. */
export function changedOps(report: Report): number[] {
  return report.ops.map((op, k) => k).filter(k => changedPrecision(report.ops[k]));
}

/**
 * Rank of an op in the table's first ("what matters") order: overflowed, host computing op,
 * end of a transfer, AI CPU op, precision changed, approximate decision, other host op, the rest.
 */
export function leadRanks(report: Report): number[] {
  const ends = new Set<number>();
  report.transfers.forEach(t => {
    ends.add(t.s);
    ends.add(t.d);
  });
  return report.ops.map((op, k) => {
    if (op.ov) {
      return 0;
    }
    if (op.e === 'HOST' && !HOST_PLUMBING.has(op.t)) {
      return 1;
    }
    if (ends.has(k)) {
      return 2;
    }
    if (op.e === 'AI_CPU') {
      return 3;
    }
    if (changedPrecision(op)) {
      return 4;
    }
    if (op.approximate) {
      return 5;
    }
    return op.e === 'HOST' ? 6 : 7;
  });
}

function opList(report: Report, ops: number[], select: (op: number) => void): HTMLElement {
  const list = h('span', { class: 'npu-lead-items' });
  ops.slice(0, LEAD_ITEMS).forEach((k, n) => {
    const o = report.ops[k];
    const b = h('button', { type: 'button', class: 'npu-lead-op', 'data-op': k, title: `${o.t}: ${report.reasons[o.pr]}` }, o.n);
    b.addEventListener('click', () => select(k));
    list.append(n > 0 ? ', ' : '', b);
  });
  if (ops.length > LEAD_ITEMS) {
    list.append(` +${ops.length - LEAD_ITEMS} more (in the table below)`);
  }
  return list;
}

/** The lead box, or null when everything runs on the device in its own precision. */
export function leadBox(report: Report, select: (op: number) => void): HTMLElement | null {
  const host = hostOps(report);
  const changed = changedOps(report);
  const aiCpu = aiCpuOps(report);
  const overflowed = overflowOps(report);
  if (host.length === 0 && report.transfers.length === 0 && changed.length === 0 && aiCpu.length === 0 && overflowed.length === 0) {
    return null;
  }
  const box = h('div', { class: 'npu-lead', role: 'region', 'aria-label': 'what to look at first' });
  const row = (key: string, label: string, ...content: (HTMLElement | string)[]): void => {
    box.append(h('div', { class: 'npu-lead-row', 'data-lead': key }, h('span', { class: 'npu-lead-label' }, label), ...content));
  };
  if (overflowed.length > 0) {
    row('overflow', `${plural(overflowed.length, 'op')} went inf/NaN, first: `, opList(report, overflowed, select));
  }
  if (host.length > 0) {
    row('host', `${plural(host.length, 'op')} on the host: `, opList(report, host, select));
  }
  if (aiCpu.length > 0) {
    row('aicpu', `${plural(aiCpu.length, 'op')} on AI CPU: `, opList(report, aiCpu, select));
  }
  const transfers = factText(report, 'transfers'); // the shipped line names the first LEAD_ITEMS (8) edges
  if (report.transfers.length > 0 && transfers) {
    row('transfers', `${plural(report.transfers.length, 'transfer')}: `, transfers);
  }
  if (changed.length > 0) {
    row('precision', `${plural(changed.length, 'op')} changed precision: `, opList(report, changed, select));
  }
  return box;
}
