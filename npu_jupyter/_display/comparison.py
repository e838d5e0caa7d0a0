"""``compare()``'s result as HTML a person can read: the differing tensors first, worst first.

A dump comparison of a small training step has hundreds of tensors, most of them identical (integer
labels, shapes, ops the precision mode left alone). Listing them all buries the few that differ, so
the view leads with a one-line verdict (how many differ, which is worst), shows the differing tensors
sorted by error (:meth:`Comparison.by_error`) up to a page, and folds the rest — more differing
tensors, then the identical ones — under ``<details>`` with their counts. The table fits the cell
(:mod:`npu_jupyter._display.fit_table`); every op name and slot is escaped.
"""

from __future__ import annotations

import math
from html import escape
from typing import TYPE_CHECKING, Any

from npu_jupyter._display.fit_table import ALERT_ROW, MONO, Cell, Column, Row, fit_table, text_cell

if TYPE_CHECKING:
    from npu_jupyter._runtime.observe.compare import Comparison

_BOX = "font-family:var(--jp-ui-font-family,system-ui,sans-serif);color:inherit;line-height:1.4;max-width:100%"
#: Differing tensors shown before the rest are folded.
PAGE = 50
#: Tensors listed inside a fold at most (the notebook stores the HTML; ``to_records()`` has every row).
FOLD_CAP = 500
#: The comparison tool's threshold: a cosine below it is a tensor that lost its direction.
COSINE_ALERT = 0.99

_METRICS = (
    ("cosine", "cosine", "cosine similarity with the reference (1 = same direction)"),
    ("max_abs", "max abs", "largest absolute difference |a − b|"),
    ("max_rel", "max rel", "largest relative difference |a − b| / |b| (near-zero b inflates it)"),
    ("accumulated_rel", "acc. rel", "accumulated relative error: Σ|a − b| / Σ|b|"),
    ("rmse", "RMSE", "root mean square of a − b"),
)


def render(comparison: Comparison) -> str:
    """The whole comparison as one escaped HTML fragment."""
    rows = comparison.by_error()
    differ = [r for r in rows if not r.identical]
    same = [r for r in rows if r.identical]
    steps = any(r.step is not None for r in rows)
    parts = [
        f'<div class="npu-compare" style="{_BOX}">',
        f'<div style="font-weight:600">{escape(comparison.title)}</div>' if comparison.title else "",
        f"<div>{escape(verdict(rows))}</div>",
    ]
    if differ:
        parts.append(_table(differ[:PAGE], steps))
    if len(differ) > PAGE:
        parts.append(_fold(f"{len(differ) - PAGE} more differing tensors, worst first", differ[PAGE:], steps))
    if same:
        parts.append(_fold(f"{len(same)} identical tensors (every error 0)", same, steps))
    parts.append(_only(comparison.only_a, comparison.only_b))
    parts.append(
        '<div style="opacity:.8">a is the run under test, b the reference; relative errors divide by |b|. '
        f"Rows with a cosine below {COSINE_ALERT} or a non-finite value are highlighted. "
        "Hover a column header for its definition.</div></div>"
    )
    return "".join(parts)


def verdict(rows: list[Any]) -> str:
    """``"218 tensors compared: 20 differ, 198 identical · worst: squares output:0 at step 0 (cosine …)"``."""
    differ = [r for r in rows if not r.identical]
    text = f"{len(rows)} tensor{'s' if len(rows) != 1 else ''} compared: {len(differ)} differ, {len(rows) - len(differ)} identical"
    if differ:
        worst = differ[0]
        at = "" if worst.step is None else f" at step {worst.step}"
        text += (
            f" · worst: {worst.op} {worst.slot}{at} (cosine {_num(worst.cosine)}, max abs {_num(worst.max_abs)}, "
            f"acc. rel {_num(worst.accumulated_rel)}) · sorted by error, worst first"
        )
    return text


def _columns(steps: bool) -> list[Column]:
    columns = [Column("step", "3.5em", numeric=True)] if steps else []
    columns += [Column("op"), Column("slot", "5.5em"), Column("shape", "6em")]
    columns += [Column(label, "6.5em", numeric=True, title=title) for _, label, title in _METRICS]
    return columns


def _table(rows: list[Any], steps: bool) -> str:
    body: list[Row] = []
    for r in rows:
        cells = [Cell("" if r.step is None else str(r.step))] if steps else []
        cells += [
            text_cell(r.op, mono=True),
            text_cell(r.slot),
            text_cell("×".join(str(d) for d in r.shape) or "scalar"),
        ]
        cells += [Cell(_num(getattr(r, key)), repr(getattr(r, key))) for key, _, _ in _METRICS]
        alert = not (r.cosine >= COSINE_ALERT) or not all(_finite(getattr(r, k)) for k, _, _ in _METRICS)
        body.append((cells, ALERT_ROW if alert else ""))
    return fit_table(_columns(steps), list(body))


def _fold(summary: str, rows: list[Any], steps: bool) -> str:
    shown = rows[:FOLD_CAP]
    more = (
        f"<div><em>{len(rows) - FOLD_CAP} more not listed; <code>comparison.to_records()</code> has every row.</em></div>"
        if len(rows) > FOLD_CAP
        else ""
    )
    return f"<details><summary>{escape(summary)}</summary>{_table(shown, steps)}{more}</details>"


def _only(only_a: list[str], only_b: list[str]) -> str:
    if not (only_a or only_b):
        return ""

    def listed(names: list[str]) -> str:
        head = ", ".join(names[:20]) + (" …" if len(names) > 20 else "")
        return f'<code style="{MONO}">{escape(head)}</code>' if names else "none"

    return f"<div>Only in a ({len(only_a)}): {listed(only_a)}; only in b ({len(only_b)}): {listed(only_b)}</div>"


def _finite(x: float) -> bool:
    return math.isfinite(x)


def _num(x: float) -> str:
    return "nan" if math.isnan(x) else f"{x:.4g}"
