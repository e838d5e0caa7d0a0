"""``text/plain`` rendering of a report, for terminal IPython, logs and diff-friendly nbval output.

Rendered from the same JSON payload as the HTML. Plain text needs no escaping, but control characters
in op names would garble a terminal, so they are shown with :func:`repr`-style escapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from npu_jupyter._display.drift import drift_text
from npu_jupyter._display.facts import op_label, op_marks, shipped_facts, time_tag
from npu_jupyter._display.html import HEADING, dtype_text, interesting_ops, summary_line

_SUMMARY_ROWS = 20


def render(payload: Mapping[str, Any], *, detail: str = "summary") -> str:
    """A few lines: title, counts, problems, run facts, then the ops that matter most."""
    lines = [_clean(payload["title"]), summary_line(payload)]
    mode = payload.get("effective_precision_mode") or "adapter default"
    options = ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in payload["config"].items())
    lines.append(
        f"precision mode: {_clean(mode)}; SoC: {_clean(payload['soc'])}"
        + (f"; options set: {_clean(options)}" if options else "")
    )
    lines += [f"ERROR: {_clean(m)}" for m in payload["errors"]]
    lines += [f"warning: {_clean(m)}" for m in payload["warnings"]]
    lines += [f"{_clean(fact.label)}: {_clean(fact.text)}" for fact in shipped_facts(payload)]

    ops = payload["ops"] if detail == "full" else interesting_ops(payload["ops"])
    heading = "ops" if detail == "full" else HEADING  # product names keep their case: AI Core, AI CPU
    if ops:
        lines.append(f"{heading} ({len(ops)}):")
        shown = ops if detail == "full" else ops[:_SUMMARY_ROWS]
        lines += [_op_line(payload, op) for op in shown]
        if len(shown) < len(ops):
            lines.append(f"  … {len(ops) - len(shown)} more")
    if payload.get("truncated"):
        lines.append("(report truncated to stay under 1 MB)")
    return "\n".join(lines)


def _op_line(payload: Mapping[str, Any], op: dict[str, Any]) -> str:
    dtype = dtype_text(op, "->")
    # An AI Core op's placement reason is always "supported"; elsewhere where it runs is the news.
    placement = "" if op["e"] == "AI_CORE" else payload["reasons"][op["pr"]]
    precision = "" if op["e"] == "HOST" else payload["reasons"][op["xr"]]
    reason = "; ".join(r for r in (placement, precision) if r)
    marks = op_marks(op)
    if op.get("us") is not None:
        marks.append(f"mean {op['us']:.1f} µs {time_tag(payload)}")  # the mean over the profiled steps
    if op.get("dr"):
        marks.append(f"drift {drift_text(op['dr'])}")
    extra = f" ({'; '.join(marks)})" if marks else ""
    name = op_label(payload, op)
    return f"  {_clean(name)} [{_clean(op['t'])}] {op['e']} {dtype}{extra}: {_clean(reason)}"


def _clean(text: str) -> str:
    """Keep printable text as is; escape control characters (newlines in a name would fake lines)."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text))
