"""``text/html`` fallback of a report: readable without the JupyterLab extension.

Rendered from the JSON payload (:mod:`npu_jupyter._display.mime`) so it shows exactly what the extension
shows. It must work in JupyterLab, classic notebook, VS Code, nbconvert/static HTML and nbval, in light
and dark themes, so it uses no scripts, no external CSS and no fixed colours for text: only inline styles,
``currentColor`` and JupyterLab CSS variables with fallbacks. Every string from the payload (op names,
types, reasons, paths, warnings) is user data and goes through :func:`html.escape`.

Layout, in the order a person porting a model reads it: title and summary counts; errors and warnings;
what the run measured; the ops that left the AI Core or changed precision; everything else collapsed.
Op tables fit the cell (:mod:`npu_jupyter._display.fit_table`): measurement columns appear only when the
cell asked for them (``--profile``: time, ``--reference``: drift).
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any
from urllib.parse import quote

from npu_jupyter._display.chart import cost_bars
from npu_jupyter._display.drift import DRIFT_UNITS, drift_text
from npu_jupyter._display.facts import (
    Fact,
    measured_label,
    op_function,
    op_label,
    op_marks,
    op_short_name,
    shipped_facts,
    step_word,
    time_tag,
)
from npu_jupyter._display.fit_table import ALERT_ROW, Cell, Column, Note, Row, fit_table, text_cell
from npu_jupyter._units import format_bytes  # re-exported: _display.html.format_bytes

DETAIL_LEVELS = ("summary", "full")
# "summary" caps the tables so a 7k-op graph does not put megabytes of HTML into the notebook;
# the JSON payload (and plan.to_records()) still has every op.
_SUMMARY_CAPS = (200, 300)  # (interesting ops, other ops)

_default_detail = "summary"

_BOX = (
    "font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:var(--jp-ui-font-size1,13px);"
    "color:inherit;background:transparent;line-height:1.4;max-width:100%;overflow-x:auto"
)
# Cell styles repeat on every row, so they stay short; borders and zebra rows come from the frontend's
# own table CSS (JupyterLab, VS Code), which already follows the theme.
_MONO = "font-family:var(--jp-code-font-family,monospace)"
_NOTE = "border-left:3px solid {color};padding:2px 8px;margin:4px 0"
_ERROR_COLOR = "var(--jp-error-color1,#d32f2f)"
_WARN_COLOR = "var(--jp-warn-color1,#f57c00)"
_ENGINE_LABEL = {"AI_CORE": "AI Core", "AI_CPU": "AI CPU", "HOST": "host"}


def default_detail() -> str:
    """Detail level used when a report renders itself (``%config NpuMagics.detail`` sets it)."""
    return _default_detail


def set_default_detail(level: str) -> None:
    """Set the session-wide detail level; only ``"summary"`` and ``"full"`` exist."""
    global _default_detail
    if level not in DETAIL_LEVELS:
        raise ValueError(f"detail must be one of {', '.join(DETAIL_LEVELS)}, not {level!r}")
    _default_detail = level


def render(payload: Mapping[str, Any], *, detail: str = "summary") -> str:
    """The whole report as one self-contained, escaped HTML fragment."""
    ops = payload["ops"]
    interesting = interesting_ops(ops)
    rest = [op for op in ops if not is_interesting(op)]
    caps = _SUMMARY_CAPS if detail == "summary" else (None, None)
    parts = [
        f'<div class="npu-report" style="{_BOX}">',
        f'<div style="font-weight:600;font-size:1.1em">{escape(payload["title"])}</div>',
        f"<div>{escape(summary_line(payload))}</div>",
        _config_line(payload),
        _notes(payload["errors"], "Error", _ERROR_COLOR),
        _notes(payload["warnings"], "Warning", _WARN_COLOR),
        _facts_section(payload),
        _op_section(payload, interesting, HEADING, caps[0]),
        _rest_section(payload, rest, caps[1]),
    ]
    if payload.get("truncated"):
        parts.append(
            "<div><em>Report truncated to stay under 1 MB: only the most relevant ops are included. "
            "Use <code>plan.to_records()</code> for every op.</em></div>"
        )
    parts.append("</div>")
    return "".join(p for p in parts if p)


HEADING = "Ops that left the AI Core (host, AI CPU) or changed precision"


def is_interesting(op: dict[str, Any]) -> bool:
    """An op a person should see first: it runs on the host or AI CPU, changed precision, or overflowed."""
    return op["e"] != "AI_CORE" or changed_precision(op) or bool(op.get("ov"))


def changed_precision(op: dict[str, Any]) -> bool:
    """The device reads or writes the op's data in another dtype than the graph declares."""
    return op["d0"] != op["d1"] or bool(op.get("rd"))


def dtype_text(op: dict[str, Any], arrow: str) -> str:
    """``float32 → float16``; ``float32 (reads float16)`` for input-only lowering; ``inputs float16, output
    int64`` for an op reading what its producers lowered (not a change of its own); else the dtype.
    """
    if op["d0"] != op["d1"]:
        return f"{op['d0']}{arrow}{op['d1']}"
    if op.get("rd"):  # an op without outputs (a variable update) only reads
        return f"{op['d0']} (reads {op['rd']})" if op["d0"] else f"reads {op['rd']}"
    if op.get("rf"):  # reads what its producers wrote in half precision (ArgMax after a float16 op)
        return f"inputs {op['rf']}, output {op['d0']}" if op["d0"] else f"inputs {op['rf']}"
    return str(op["d0"])


_FLOAT_DTYPES = ("float16", "float32", "float64", "bfloat16")


def interest_rank(op: dict[str, Any]) -> int:
    """0 overflowed, 1 float op on the host (slow round trips), 2 AI CPU op, 3 precision changed, 4 others.

    An AI CPU op splits the device graph and runs far slower than on the AI Core, so it comes before
    the (many) precision changes; host-only shape constants and integer bookkeeping come last.
    """
    if op.get("ov"):
        return 0
    if op["e"] == "HOST" and op["d0"] in _FLOAT_DTYPES and op["t"] not in ("Const", "Placeholder"):
        return 1
    if op["e"] == "AI_CPU":
        return 2
    if changed_precision(op):
        return 3
    return 4


def interesting_ops(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The interesting ops, most urgent first, graph order within a rank."""
    return sorted((op for op in ops if is_interesting(op)), key=interest_rank)


def summary_line(payload: Mapping[str, Any]) -> str:
    """``"120 ops: 100 AI Core, 5 AI CPU, 15 host · 40 changed precision · 2 clusters · …"``."""
    s = payload["summary"]
    line = (
        f"{s['ops']} ops{functions_scope(payload)}: {s['ai_core']} AI Core, {s['ai_cpu']} AI CPU, {s['host']} host"
        f" · {s['precision_changed']} changed precision · {s['clusters']} device "
        f"cluster{'s' if s['clusters'] != 1 else ''} · {s['transfers']} host↔device transfer"
        f"{'s' if s['transfers'] != 1 else ''}"
    )
    if s.get("transfer_bytes") is not None and s["transfers"]:
        line += f" ({format_bytes(s['transfer_bytes'])})"
    return line


def functions_scope(payload: Mapping[str, Any]) -> str:
    """`` (train_step and the 2 functions it calls)``: what the counts of a traced function's report cover."""
    functions = payload.get("functions") or []
    if len(functions) < 2:
        return ""
    called = len(functions) - 1
    return f" ({functions[0]['label']} and the {called} function{'s' if called != 1 else ''} it calls)"


def _config_line(payload: Mapping[str, Any]) -> str:
    mode = payload.get("effective_precision_mode") or "adapter default"
    changed = ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in payload["config"].items())
    text = f"Precision mode: {mode} · SoC: {payload['soc']}"
    text += f" · options set: {changed}" if changed else " · no options set (adapter defaults)"
    return f'<div style="opacity:.85">{escape(text)}</div>'


def _notes(messages: list[str], label: str, color: str) -> str:
    return "".join(
        f'<div style="{_NOTE.format(color=color)}"><strong>{label}:</strong> {escape(m)}</div>' for m in messages
    )


def _facts_section(payload: Mapping[str, Any]) -> str:
    """What the run measured, where it wrote files, estimates and notes (one line per fact, labelled).

    The costliest ops become a bar chart here; the other views list them in one line.
    """
    parts = []
    for fact in shipped_facts(payload):
        if fact.key == "ops.us":
            parts.append(cost_bars(payload["ops"], heading=fact.label, name_of=lambda op: op_label(payload, op)))
        else:
            parts.append(_fact_html(fact))
    return "".join(parts)


def _fact_html(fact: Fact) -> str:
    """One labelled line; problems get the note bar of their colour, paths and op names code font."""
    label = f"<strong>{escape(fact.label)}:</strong> "
    if fact.tone in ("error", "warn"):
        color = _ERROR_COLOR if fact.tone == "error" else _WARN_COLOR
        value = escape(fact.text)
        if fact.key == "run.first_overflow":
            value = f'<code style="{_MONO}">{value}</code>'
        return f'<div style="{_NOTE.format(color=color)}">{label}{value}</div>'
    if fact.tone == "path":
        return f"<div>{label}{path_html(fact.text)}</div>"
    return f"<div>{label}{escape(fact.text)}</div>"


def path_html(path: str) -> str:
    """A path in code font; a relative one (inside the notebook's folder) is also a link.

    JupyterLab resolves a relative link in an output against the notebook's folder and opens the
    file (or shows the folder) in Lab; an absolute path lies outside what the server can open.
    """
    code = f'<code style="{_MONO}">{escape(path)}</code>'
    if not is_openable(path):
        return code
    return f'<a href="{escape(quote(path), quote=True)}" title="open in JupyterLab">{code}</a>'


def is_openable(path: str) -> bool:
    """Relative and not leaving the notebook's folder: a path JupyterLab can open from an output."""
    return bool(path) and not path.startswith(("/", "\\", "~")) and ":" not in path and not path.startswith("..")


def _op_section(payload: Mapping[str, Any], ops: list[dict[str, Any]], heading: str, cap: int | None) -> str:
    if not ops:
        return f"<div><em>{escape(heading)}: none.</em></div>"
    return f'<div style="font-weight:600;margin-top:6px">{escape(heading)} ({len(ops)})</div>' + _table(
        payload, ops, cap
    )


def _rest_section(payload: Mapping[str, Any], ops: list[dict[str, Any]], cap: int | None) -> str:
    """The remaining ops, collapsed; in a report on several functions, one section per function."""
    if not ops:
        return ""
    functions = payload.get("functions") or []
    if len(functions) < 2:
        return (
            f"<details><summary>All other ops ({len(ops)}): on the device, precision unchanged</summary>"
            f"{_table(payload, ops, cap)}</details>"
        )
    parts = []
    for where, function in enumerate(functions):
        mine = [op for op in ops if op.get("f", 0) == where]
        if mine:
            whose = "" if where == 0 else ", called"
            parts.append(
                f"<details><summary>All other ops of {escape(function['label'])}{whose} ({len(mine)}): on the "
                f"device, precision unchanged</summary>{_table(payload, mine, cap)}</details>"
            )
    return "".join(parts)


def _table(payload: Mapping[str, Any], ops: list[dict[str, Any]], cap: int | None) -> str:
    reasons = payload["reasons"]
    # Measurement columns only when the run measured something, so plan tables stay narrow.
    timed = any(op.get("us") is not None for op in ops)
    drifted = any(op.get("dr") for op in ops)
    several = len(payload.get("functions") or []) > 1
    columns = [
        Column("Op"),
        *([Column("Function", "9em")] * several),
        Column("Type", "9em"),
        Column("Engine", "5.5em"),
        Column("dtype", "8.5em"),
        Column("Placement reason"),
        Column("Precision reason"),
    ]
    if timed:
        head = f"mean {time_tag(payload)} µs"  # a CPU time must not read as an NPU time, even in a header
        columns.append(Column(head, "6em", True, f"mean µs per {step_word(payload)}, {measured_label(payload, 'us')}"))
    if drifted:
        columns.append(Column("Drift vs float32", "11em", title=DRIFT_UNITS))
    shown = ops if cap is None else ops[:cap]
    rows: list[Row | Note] = []
    for op in shown:
        dtype = escape(dtype_text(op, " → "))
        dtype = f"<strong>{dtype}</strong>" if changed_precision(op) else dtype
        name = text_cell(op_short_name(payload, op), mono=True)
        flag = "".join(f' <span style="white-space:nowrap">{escape(mark)}</span>' for mark in op_marks(op))
        cells = [
            Cell(name.html + flag, op["n"]),
            *([text_cell(op_function(payload, op))] * several),
            text_cell(op["t"]),
            Cell(escape(_ENGINE_LABEL.get(op["e"], op["e"]))),
            Cell(dtype),
            text_cell(reasons[op["pr"]]),
            text_cell(reasons[op["xr"]]),
        ]
        if timed:
            cells.append(Cell("" if op.get("us") is None else f"{op['us']:.1f}"))
        if drifted:
            cells.append(text_cell(drift_text(op["dr"]) if op.get("dr") else ""))
        rows.append((cells, ALERT_ROW if op.get("ov") else ""))
    more = ""
    if cap is not None and len(ops) > cap:
        more = (
            f"<div><em>{len(ops) - cap} more not shown; "
            "<code>%config NpuMagics.detail = 'full'</code> shows every op.</em></div>"
        )
    return fit_table(columns, rows) + more
