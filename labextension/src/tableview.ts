/**
 * The op table: every op with where it runs, its dtype before/after and both reasons; sortable by
 * any column and filterable. Only the rows in view exist in the DOM (a 7k-op report would
 * otherwise cost tens of thousands of cells), between two spacer rows that keep the scroll height.
 */

import { clear, h } from './elements';
import { DRIFT_UNITS, driftText, dtypeText, measuredLabel, opMarks, opShortName, stepWord, timeTag } from './optext';
import { ENGINE_LABELS, opClasses } from './palette';
import { ENGINES, Engine, Report } from './schema';
import { plural } from './labels';
import { DEFAULT_QUERY, SortKey, TableQuery, functionLabel, searchTexts, selectRows } from './tabledata';

/** Must match `.npu-table tbody tr.npu-row` height in style/base.css (two 13 px lines + padding). */
export const ROW_HEIGHT = 32;
const OVERSCAN = 12;

export interface Column {
  key: SortKey;
  label: string;
  cell: (op: number) => string;
  /**
   * CSS width; columns without one share what is left. The two reason columns -- why an op runs
   * where it runs and in which precision, the point of the report -- are the ones left without,
   * so they get most of the table; short fixed texts (index, engine, cluster) get narrow columns.
   */
  width?: string;
  /** Text wraps onto a second line (and the full text is always on hover). */
  wrap?: boolean;
  /** The header's tooltip when the label alone does not say what the numbers are (drift units). */
  help?: string;
}

export class OpTable {
  readonly node: HTMLElement;
  /** Op indices in display order after filtering and sorting. */
  rows: number[] = [];
  private query: TableQuery = { ...DEFAULT_QUERY };
  private selected: number | null = null;
  private readonly texts: string[];
  private readonly columns: Column[];
  private readonly scroller: HTMLElement;
  private readonly body: HTMLTableSectionElement;
  private readonly headRow: HTMLTableRowElement;
  private readonly countLabel: HTMLElement;
  private pending = false;
  /** Rows [first, last) now in the DOM, and whether they must be redrawn anyway. */
  private drawn = { first: 0, last: 0, stale: true };

  constructor(
    private readonly report: Report,
    private readonly onSelectOp: (op: number) => void
  ) {
    this.texts = searchTexts(report);
    this.columns = this.makeColumns();
    this.countLabel = h('span', { class: 'npu-table-count' });
    this.headRow = h('tr');
    this.body = h('tbody');
    this.scroller = h(
      'div',
      { class: 'npu-table-scroll' },
      h('table', { class: 'npu-table' }, this.colgroup(), h('thead', {}, this.headRow), this.body)
    );
    this.scroller.addEventListener('scroll', () => this.schedule());
    this.body.addEventListener('click', event => {
      const row = (event.target as Element | null)?.closest?.('tr[data-op]');
      if (row) {
        this.onSelectOp(Number(row.getAttribute('data-op')));
      }
    });
    this.node = h('div', { class: 'npu-table-view' }, this.controls(), this.scroller);
    this.renderHead();
    this.refresh();
  }

  private makeColumns(): Column[] {
    const r = this.report;
    const ops = r.ops;
    const columns: Column[] = [
      { key: 'index', label: '#', cell: k => String(k), width: '3.2em' },
      {
        key: 'name',
        label: 'op',
        // Approximate decisions and overflows are marked on the op itself, not only in the summary.
        cell: k => [opShortName(r, ops[k]), ...opMarks(ops[k])].join(' · '),
        width: '17%',
        wrap: true
      },
      // a call tree: each op's function; the function filter expands the table into one callee
      ...((r.functions?.length ?? 0) > 1
        ? [{ key: 'function' as SortKey, label: 'function', cell: (k: number) => functionLabel(r, ops[k]), width: '9%', wrap: true }]
        : []),
      { key: 'type', label: 'type', cell: k => ops[k].t, width: '8%' },
      { key: 'engine', label: 'engine', cell: k => ENGINE_LABELS[ops[k].e], width: '5em' },
      {
        key: 'precision',
        label: 'dtype',
        cell: k => dtypeText(ops[k]),
        width: '8em',
        wrap: true
      },
      { key: 'placementReason', label: 'placement reason', cell: k => r.reasons[ops[k].pr], wrap: true },
      { key: 'precisionReason', label: 'precision reason', cell: k => r.reasons[ops[k].xr], wrap: true }
    ];
    // With one device cluster the column repeats one name on every row: shown only when it tells,
    // and only when the run asked for no measurement (time, drift): those columns take its place
    // so the reasons keep their width (the summary chip and the details pane name the cluster).
    const measured = ops.some(op => op.us !== undefined) || ops.some(op => op.dr !== undefined);
    if (r.clusters.length > 1 && !measured) {
      columns.splice(5, 0, {
        key: 'cluster',
        label: 'cluster',
        cell: k => (ops[k].c >= 0 ? r.clusters[ops[k].c].name : ''),
        width: '5em'
      });
    }
    if (ops.some(op => op.us !== undefined)) {
      columns.push({
        key: 'time',
        label: `mean ${timeTag(r)} \u00b5s`,
        cell: k => (ops[k].us === undefined ? '' : ops[k].us!.toFixed(1)),
        width: '5.5em',
        help: `mean \u00b5s per ${stepWord(r)} (${measuredLabel(r, 'us')})`
      });
    }
    if (ops.some(op => op.dr !== undefined)) {
      columns.push({
        key: 'drift',
        label: 'drift vs float32',
        cell: k => (ops[k].dr === undefined ? '' : driftText(ops[k].dr!) + (ops[k].ov ? ' (inf/NaN)' : '')),
        width: '8.5em',
        wrap: true,
        help: `drift vs float32 \u2014 ${DRIFT_UNITS}`
      });
    }
    return columns;
  }

  /** The columns shown, in order (their widths and wrapping are part of the layout). */
  get columnSpecs(): readonly Column[] {
    return this.columns;
  }

  private colgroup(): HTMLElement {
    const group = h('colgroup');
    for (const col of this.columns) {
      const el = h('col', { class: `npu-col-${col.key}` });
      if (col.width) {
        el.style.width = col.width;
      }
      group.append(el);
    }
    return group;
  }

  private controls(): HTMLElement {
    const text = h('input', {
      type: 'search',
      class: 'npu-filter jp-mod-styled',
      placeholder: 'filter: name, type, dtype, reason\u2026',
      'aria-label': 'filter ops'
    });
    text.addEventListener('input', () => this.setQuery({ text: text.value }));
    const engine = h(
      'select',
      { class: 'npu-engine-filter jp-mod-styled', 'aria-label': 'engine' },
      h('option', { value: '' }, 'all engines'),
      ...ENGINES.map(e => h('option', { value: e }, ENGINE_LABELS[e]))
    );
    engine.addEventListener('change', () => this.setQuery({ engine: engine.value as Engine | '' }));
    const changed = h('input', { type: 'checkbox', class: 'npu-changed-filter' });
    changed.addEventListener('change', () => this.setQuery({ changedOnly: changed.checked }));
    return h(
      'div',
      { class: 'npu-table-controls' },
      text,
      engine,
      ...this.functionFilter(),
      h('label', {}, changed, ' precision changed only'),
      this.countLabel
    );
  }

  /** A call tree's function picker: all functions, the reported one, or one function it calls. */
  private functionFilter(): HTMLElement[] {
    const functions = this.report.functions ?? [];
    if (functions.length < 2) {
      return [];
    }
    const pick = h(
      'select',
      { class: 'npu-function-filter jp-mod-styled', 'aria-label': 'function' },
      h('option', { value: '-1' }, `all ${functions.length} functions`),
      ...functions.map((f, k) => h('option', { value: String(k) }, k === 0 ? f.label : `${f.label} (called)`))
    );
    pick.addEventListener('change', () => this.setQuery({ fn: Number(pick.value) }));
    return [pick];
  }

  /** Change the filter or sort and show the result from the top. */
  setQuery(change: Partial<TableQuery>): void {
    this.query = { ...this.query, ...change };
    this.refresh();
  }

  get currentQuery(): TableQuery {
    return { ...this.query };
  }

  private refresh(): void {
    this.rows = selectRows(this.report, this.query, this.texts);
    this.drawn.stale = true;
    this.countLabel.textContent = `${this.rows.length} of ${plural(this.report.ops.length, 'op')}`;
    this.countLabel.title = this.query.sort === 'interest' ? 'sorted with what matters first: host ops and transfers, then precision changes' : '';
    this.scroller.scrollTop = 0;
    this.renderHead();
    this.renderRows();
  }

  private renderHead(): void {
    clear(this.headRow);
    for (const col of this.columns) {
      const active = this.query.sort === col.key;
      const th = h(
        'th',
        {
          role: 'columnheader',
          tabindex: 0,
          title: col.help ?? col.label,
          'aria-sort': active ? (this.query.descending ? 'descending' : 'ascending') : 'none'
        },
        col.label,
        active ? (this.query.descending ? ' \u25bc' : ' \u25b2') : ''
      );
      const sort = (): void =>
        this.setQuery({ sort: col.key, descending: active ? !this.query.descending : false });
      th.addEventListener('click', sort);
      th.addEventListener('keydown', event => event.key === 'Enter' && sort());
      this.headRow.append(th);
    }
  }

  private schedule(): void {
    if (this.pending) {
      return;
    }
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.renderRows();
    });
  }

  /**
   * Draw the rows in view (plus some overscan) between spacers. While the rows in view are
   * already drawn nothing is replaced, so a click that straddles a small scroll still lands.
   */
  private renderRows(): void {
    const viewHeight = this.scroller.clientHeight || 320;
    const top = Math.floor(this.scroller.scrollTop / ROW_HEIGHT);
    const bottom = Math.min(this.rows.length, top + Math.ceil(viewHeight / ROW_HEIGHT) + 1);
    if (!this.drawn.stale && top >= this.drawn.first && bottom <= this.drawn.last) {
      return;
    }
    const first = Math.max(0, top - OVERSCAN);
    const last = Math.min(this.rows.length, first + Math.ceil(viewHeight / ROW_HEIGHT) + 2 * OVERSCAN);
    this.drawn = { first, last, stale: false };
    clear(this.body);
    const spacer = (rows: number): HTMLTableRowElement => {
      const tr = h('tr', { class: 'npu-spacer' }, h('td', { colspan: this.columns.length }));
      tr.style.height = `${rows * ROW_HEIGHT}px`;
      return tr;
    };
    if (first > 0) {
      this.body.append(spacer(first));
    }
    for (let k = first; k < last; k++) {
      const op = this.rows[k];
      const tr = h('tr', { class: `npu-row ${opClasses(this.report.ops[op])}`, 'data-op': op });
      if (op === this.selected) {
        tr.classList.add('npu-selected');
        tr.setAttribute('aria-selected', 'true');
      }
      for (const col of this.columns) {
        const text = col.cell(op);
        if (col.wrap) {
          tr.append(h('td', { title: text || undefined }, h('div', { class: 'npu-wrap' }, text)));
        } else {
          tr.append(h('td', { title: text.length > 10 ? text : undefined }, text));
        }
      }
      this.body.append(tr);
    }
    if (last < this.rows.length) {
      this.body.append(spacer(this.rows.length - last));
    }
  }

  /** Highlight an op's row; scroll to it when asked (it may be filtered out: then nothing to show). */
  select(op: number | null, scroll: boolean): void {
    this.selected = op;
    this.drawn.stale = true;
    if (op !== null && scroll) {
      const at = this.rows.indexOf(op);
      if (at >= 0) {
        const view = this.scroller.clientHeight || 320;
        this.scroller.scrollTop = Math.max(0, at * ROW_HEIGHT - view / 2);
      }
    }
    this.renderRows();
  }
}
