"""Inline bar chart of the costliest ops of a profiled run, as plain HTML.

HTML bars (a ``div`` whose width is the op's share of the slowest op) rather than SVG or a plotting
library: they need no script, scale with the text, follow the theme through ``currentColor``/JupyterLab
variables, and render identically in nbconvert and VS Code. Op names are escaped user data.
"""

from __future__ import annotations

from html import escape
from typing import Any, Callable

_BAR = "height:0.9em;background:var(--jp-brand-color1,#1976d2);opacity:.75;border-radius:2px"
_ROW = "display:flex;align-items:center;gap:8px;margin:1px 0"
_LABEL = (
    "flex:0 0 40%;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;"
    "font-family:var(--jp-code-font-family,monospace)"
)


def costliest(ops: list[dict[str, Any]], top: int = 10) -> list[dict[str, Any]]:
    """The ``top`` ops with a measured time, slowest first (ties by graph order, so output is stable)."""
    timed = [(i, op) for i, op in enumerate(ops) if op.get("us") is not None]
    timed.sort(key=lambda item: (-item[1]["us"], item[0]))
    return [op for _, op in timed[:top]]


_SHARE = "share of the sum of every timed op's mean time"


def cost_bars(
    ops: list[dict[str, Any]],
    top: int = 10,
    *,
    heading: str = "Costliest ops (mean per step)",
    name_of: Callable[[dict[str, Any]], str] | None = None,
) -> str:
    """HTML for the costliest ops' mean time per step; "" when the run was not profiled.

    ``heading`` says what the times are (whose clock, the mean over which steps); it is escaped. Each
    op's share is of the total of every timed op's mean, and says so.
    ``name_of`` gives the name shown for an op (its short name and function in a call tree's report).
    """
    chosen = costliest(ops, top)
    if not chosen:
        return ""
    slowest = chosen[0]["us"] or 1.0
    total = sum(op["us"] for op in ops if op.get("us") is not None) or 1.0
    rows = []
    for op in chosen:
        width = max(1.0, 100.0 * op["us"] / slowest)
        share = 100.0 * op["us"] / total
        name = escape(name_of(op) if name_of is not None else op["n"])
        rows.append(
            f'<div style="{_ROW}"><span style="{_LABEL}" title="{name}">{name}</span>'
            f'<span style="flex:1 1 auto"><div style="{_BAR};width:{width:.1f}%"></div></span>'
            f'<span style="flex:0 0 auto;min-width:13em;text-align:right" title="{_SHARE}">'
            f"{op['us']:.1f} µs ({share:.0f}% of total) {escape(op['t'])}</span></div>"
        )
    return f'<div style="margin:6px 0"><div style="font-weight:600">{escape(heading)}</div>{"".join(rows)}</div>'
