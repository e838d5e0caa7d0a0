/**
 * The report's labelled facts — what a run measured and where it wrote files, the first overflow or
 * non-finite value, skipped dump steps, the cost model's estimate, approximate decisions, notes — as
 * the payload ships them: `npu_jupyter/_display/facts.py` computes the lines once and the HTML, text
 * and this view draw them as they are (tests/display/test_view_parity.py). Every value becomes a
 * text node; a path the notebook's folder holds becomes a link JupyterLab opens.
 */

import { fileLink, h, isOpenable } from './elements';
import type { Report } from './schema';

/**
 * Makes a link open in JupyterLab (the renderer's resolver and link handler); absent outside Lab,
 * where the link keeps its plain relative href.
 */
export type PathLinker = (anchor: HTMLAnchorElement, path: string, folder: boolean) => void;

/** Facts whose path is a folder (opened in the file browser), not a file. */
const FOLDER_FACTS: ReadonlySet<string> = new Set(['run.dump_dir', 'run.adapter_outputs']);

/** The text of the shipped fact that shows payload field `key` ("" when the report has none). */
export function factText(report: Report, key: string): string {
  return report.facts.find(f => f.key === key)?.text ?? '';
}

function pathValue(path: string, folder: boolean, linker?: PathLinker): HTMLElement {
  const code = h('code', { class: 'npu-fact-value' }, path);
  if (!isOpenable(path)) {
    return code;
  }
  const anchor = fileLink(path, { class: 'npu-path-link', title: 'open in JupyterLab' }, code);
  linker?.(anchor, path, folder);
  return anchor;
}

/**
 * The facts as a list of labelled lines (null when the report has none). `skip` leaves out facts
 * another part of the view already shows (the lead box shows the transfers).
 */
export function factsList(report: Report, skip: readonly string[] = [], linker?: PathLinker): HTMLElement | null {
  const facts = report.facts.filter(f => !skip.includes(f.key));
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
