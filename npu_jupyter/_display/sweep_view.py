"""``sweep()``'s table as HTML that fits the cell: estimates first, CPU time last, refusals on their row.

Twelve one-number columns ran past the right edge of a notebook cell beside JupyterLab's file
browser, taking the CPU time and the "adapter would refuse" notes with them. Here each estimate and
its float32 ratio share a cell, one per line ("0.0307" over "0.99× fp32"), so do the three drift
metrics (rel. RMSE, the figure the worst op is ranked by, first); the first-overflow column appears only when a mode overflowed, names wrap, and the table
takes the cell's width (:mod:`npu_jupyter._display.fit_table`).
A mode the adapter would refuse is marked in its mode cell and explained on a line under it.
"""

from __future__ import annotations

import math
from html import escape
from typing import TYPE_CHECKING, Any

from npu_jupyter._display.fit_table import ALERT_ROW, Cell, Column, Note, Row, fit_table, text_cell
from npu_jupyter._runtime.observe.drift_ranking import AGAINST_INPUTS, figure_text
from npu_jupyter._units import format_bytes

if TYPE_CHECKING:
    from npu_jupyter._sweep import SweepRow, SweepTable

_WARN = "border-left:3px solid var(--jp-warn-color1,#f57c00)"


def render(table: SweepTable) -> str:
    """The sweep as one escaped HTML fragment: a verdict line, the table, the legend."""
    rows = table.rows
    overflow = any(r.first_overflow for r in rows)
    columns = _columns(overflow)
    body: list[Row | Note] = []
    for r in rows:
        if r.error:
            body.append(([text_cell(r.mode, mono=True)] + [Cell("")] * (len(columns) - 1), ALERT_ROW))
            body.append(Note(f"the emulator could not run this mode: {escape(r.error)}", ALERT_ROW))
            continue
        body.append((_cells(r, overflow), ""))
        if r.refused:
            why = escape("; ".join(r.plan_errors))
            body.append(
                Note(
                    f"the adapter would refuse this graph, so it has no step time; the drift above is emulated only: {why}",
                    _WARN,
                )
            )
    return (
        '<div class="npu-sweep" style="font-family:var(--jp-ui-font-family,system-ui,sans-serif);color:inherit;'
        'line-height:1.4;max-width:100%">'
        f"<div><strong>Precision sweep of {escape(', '.join(table.fetches))}</strong> · {escape(_verdict(rows))}</div>"
        f"{fit_table(columns, body)}"
        f'<div style="opacity:.8">{escape(table.legend())}</div></div>'
    )


def _verdict(rows: list[Any]) -> str:
    refused = [r.mode for r in rows if r.refused]
    failed = [r.mode for r in rows if r.error]
    text = f"{len(rows)} mode{'s' if len(rows) != 1 else ''}"
    if refused:
        text += f"; refused by the adapter (no step time, drift emulated only): {', '.join(refused)}"
    if failed:
        text += f"; not run: {', '.join(failed)}"
    return text


def _columns(overflow: bool) -> list[Column]:
    columns = [
        Column("mode"),
        Column("est. NPU ms/step", "7.5em", True, "estimated by the cost model (not measured), and vs float32"),
        Column("est. memory", "7.5em", True, "estimated activation + weight memory, and vs float32"),
        Column("ops changed", "6em", True, "ops whose precision the mode changed"),
        Column(
            "output drift vs float32",
            "12em",
            True,
            "rel. RMSE: root mean square of a − b over that of the float32 value b (the worst fetch's); "
            "max abs: largest |a − b|; cos: cosine similarity (1 = same)",
        ),
        Column(
            "worst op",
            title="the op that drifted most from float32 by rel. RMSE, as the report's Largest drift line ranks; "
            "none: no op drifted",
        ),
    ]
    if overflow:
        columns.append(Column("first overflow", title="first op whose output became inf/NaN"))
    columns.append(
        Column(
            "ms/step on this CPU (emulation)",
            "8em",
            True,
            "wall-clock time of the emulation on this CPU (not NPU time)",
        )
    )
    return columns


def _cells(r: SweepRow, overflow: bool) -> list[Cell]:
    mode = text_cell(r.mode, mono=True)
    if r.refused:
        mode = Cell(
            f"{mode.html} <strong>refused</strong>", f"{r.mode}: refused by the adapter; the numbers are emulated only"
        )
    memory = "n/a" if r.est_memory_bytes is None else format_bytes(int(r.est_memory_bytes))
    # A refused mode has no step on the device to estimate or time (its drift is still emulated).
    step = _lines("refused") if r.refused else _lines(_num(r.est_step_ms, ".4g"), _ratio(r.est_step_vs_fp32))
    # One figure per line: a narrow column holds an estimate and its ratio, or the three drift metrics.
    cells = [
        mode,
        Cell(step),
        Cell(_lines("refused") if r.refused else _lines(memory, _ratio(r.est_memory_vs_fp32))),
        Cell(str(r.ops_changed)),
        Cell(
            _lines(
                f"rel. RMSE {_num(r.rel_rmse, '.3g')}",
                f"max abs {_num(r.max_abs, '.3g')}",
                f"cos {_num(r.cosine, '.6f')}",
            )
        ),
        _worst_cell(r),
    ]
    if overflow:
        cells.append(text_cell(r.first_overflow or "", mono=True))
    cells.append(Cell("refused" if r.refused else _num(r.wall_ms, ".3f")))
    return cells


def _worst_cell(r: SweepRow) -> Cell:
    """The worst op's name with the figure it was ranked by under it, or "none" when no op drifted."""
    if not r.worst_op:
        return Cell("none", "no op drifted from float32")
    name = text_cell(r.worst_op, mono=True)
    if r.worst_op_rel_rmse is None:
        return name
    figure = "rel. RMSE " + figure_text(r.worst_op_rel_rmse)
    if getattr(r, "worst_op_cancelled", False):  # a row pickled before the field existed has none
        figure += f" {AGAINST_INPUTS}"
    return Cell(f"{name.html}<br>{escape(figure)}", f"{r.worst_op} ({figure})")


def _lines(*parts: str) -> str:
    return "<br>".join(escape(p) for p in parts if p)


def _ratio(ratio: float | None) -> str:
    return "" if ratio is None else f"{ratio:.2f}× fp32"


def _num(x: float | None, spec: str) -> str:
    if x is None:
        return "n/a"
    return "nan" if math.isnan(x) else format(x, spec)
