/**
 * The bar read first: where the ops run, how many changed precision, how the graph splits into
 * device clusters and host<->device transfers, and whether the plan has warnings or errors.
 */

import { h } from './elements';
import { ENGINE_LABELS, engineClass } from './palette';
import { plural } from './labels';
import type { Report } from './schema';
import { DRIFT_UNITS, callsSplit, g3, stepWord, wallTimeText, worstDrift } from './optext';

/** A count chip whose noun agrees with the count: "1 cluster", "2 clusters". */
function countChip(n: number, singular: string, extraClass = '', many = `${singular}s`): HTMLElement {
  const [value, ...noun] = plural(n, singular, many).split(' ');
  return chip(noun.join(' '), value, extraClass);
}

function chip(label: string, value: string, extraClass = ''): HTMLElement {
  return h(
    'span',
    { class: `npu-chip ${extraClass}`.trim(), role: 'listitem' },
    h('span', { class: 'npu-chip-value' }, value),
    h('span', { class: 'npu-chip-label' }, label)
  );
}

/** Bytes in the unit a person reads without counting digits. */
export function formatBytes(bytes: number | null): string {
  if (bytes === null) {
    return 'size unknown';
  }
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u += 1;
  }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`;
}

export function summaryBar(report: Report): HTMLElement {
  const s = report.summary;
  const bar = h('div', { class: 'npu-summary', role: 'list', 'aria-label': 'report summary' });
  const bytes = ` (${formatBytes(s.transfer_bytes)})`;
  // The table shows no cluster column for a single cluster, so the chip names the (few) clusters.
  const names = report.clusters.length > 0 && report.clusters.length <= 3 ? ` (${report.clusters.map(c => c.name).join(', ')})` : '';
  bar.append(
    countChip(s.ops, 'op'),
    chip(ENGINE_LABELS.AI_CORE, String(s.ai_core), `npu-chip-engine ${engineClass('AI_CORE')}`),
    chip(ENGINE_LABELS.AI_CPU, String(s.ai_cpu), `npu-chip-engine ${engineClass('AI_CPU')}`),
    chip(ENGINE_LABELS.HOST, String(s.host), `npu-chip-engine ${engineClass('HOST')}`),
    chip('precision changed', String(s.precision_changed)),
    countChip(s.clusters, `cluster${names}`, '', `clusters${names}`),
    countChip(s.transfers, `transfer${bytes}`, '', `transfers${bytes}`),
    countChip(report.warnings.length, 'warning', report.warnings.length ? 'npu-chip-warn' : ''),
    countChip(report.errors.length, 'error', report.errors.length ? 'npu-chip-error' : '')
  );
  const functions = report.functions ?? [];
  if (functions.length > 1) {
    // the counts above include the functions the reported one calls: say so next to them
    const called = functions.length - 1;
    bar.append(chip(`(${functions[0].label} and the ${plural(called, 'function', 'functions')} it calls)`, '', 'npu-chip-scope'));
  }
  if (s.approximate) {
    bar.append(chip('approximate (\u2248)', String(s.approximate), 'npu-chip-warn'));
  }
  if (report.run) {
    const r = report.run;
    const time = wallTimeText(report); // one thing: what the number is and how it is aggregated
    bar.append(chip('backend', r.backend), countChip(r.steps, stepWord(report)));
    const split = callsSplit(report); // fit's validation ran the test function evaluate runs: whose calls are whose
    if (split) {
      bar.append(chip(`(${split})`, '', 'npu-chip-scope'));
    }
    bar.append(chip(time.label, time.value));
    if (r.first_overflow !== null) {
      bar.append(chip('first overflow', r.first_overflow, 'npu-chip-error'));
    } else if (r.overflow_check !== undefined) {
      // the check ran and found nothing: say so, or it reads as no check (the facts say what it checked)
      const step = stepWord(report);
      bar.append(chip('overflow check', `no inf/NaN in ${plural(r.overflow_check.checked, step, `${step}s`)}`));
    }
    const [worst] = worstDrift(report);
    if (worst !== undefined) {
      // The header's worst-drift summary; the facts below list the top three with the units.
      const dr = report.ops[worst].dr!;
      const rel = dr.in_rel ?? dr.rel_rmse; // a cancelled reference is ranked against its inputs' scale
      const against = dr.in_rel === undefined || dr.in_rel === null ? '' : " against its inputs' scale";
      const value = rel === null || rel === undefined ? 'inf/NaN' : `${g3(rel)} rel. RMSE${against}`;
      const item = chip(`worst drift vs float32: ${report.ops[worst].n}`, value, 'npu-chip-drift');
      item.title = `the op that drifted most from float32 (${DRIFT_UNITS})`;
      bar.append(item);
    }
  }
  return bar;
}

/** Warnings and errors as lists (closed when long, so the graph stays on screen). */
export function findings(report: Report): HTMLElement | null {
  if (report.warnings.length === 0 && report.errors.length === 0 && !report.truncated) {
    return null;
  }
  const box = h('div', { class: 'npu-findings' });
  const section = (label: string, items: string[], cls: string): void => {
    if (items.length === 0) {
      return;
    }
    const details = h('details', { class: cls }, h('summary', {}, `${label} (${items.length})`));
    details.open = items.length <= 3;
    details.append(h('ul', {}, ...items.map(text => h('li', {}, text))));
    box.append(details);
  };
  section('Errors', report.errors, 'npu-errors');
  section('Warnings', report.warnings, 'npu-warnings');
  if (report.truncated) {
    box.append(h('p', { class: 'npu-truncated' }, 'Report truncated to stay under 1 MB: only the most relevant ops are included.'));
  }
  return box;
}
