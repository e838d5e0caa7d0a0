"""``text/plain`` rendering of a report, for terminal IPython, logs and diff-friendly nbval output.

Rendered from the same JSON payload as the HTML. Plain text needs no escaping, but control characters
in op names would garble a terminal, so they are shown with :func:`repr`-style escapes.
"""

from __future__ import annotations

from typing import Any

from npu_jupyter.display.chart import costliest
from npu_jupyter.display.html import interesting_ops, summary_line

_SUMMARY_ROWS = 20


def render(payload: dict[str, Any], *, detail: str = "summary") -> str:
    """A few lines: title, counts, problems, run facts, then the ops that matter most."""
    lines = [_clean(payload["title"]), summary_line(payload)]
    mode = payload.get("effective_precision_mode") or "adapter default"
    lines.append(f"precision mode: {_clean(mode)}; SoC: {_clean(payload['soc'])}")
    lines += [f"ERROR: {_clean(m)}" for m in payload["errors"]]
    lines += [f"warning: {_clean(m)}" for m in payload["warnings"]]
    lines += _run_lines(payload)
    ops = payload["ops"] if detail == "full" else interesting_ops(payload["ops"])
    heading = "ops" if detail == "full" else "ops that left the device or changed precision"
    if ops:
        lines.append(f"{heading} ({len(ops)}):")
        shown = ops if detail == "full" else ops[:_SUMMARY_ROWS]
        lines += [_op_line(payload, op) for op in shown]
        if len(shown) < len(ops):
            lines.append(f"  … {len(ops) - len(shown)} more")
    if payload.get("truncated"):
        lines.append("(report truncated to stay under 1 MB)")
    return "\n".join(lines)


def _run_lines(payload: dict[str, Any]) -> list[str]:
    run = payload.get("run")
    if not run:
        return []
    per = " per step" if run["steps"] != 1 else ""
    lines = [f"run: backend {run['backend']}, {run['steps']} step(s), {run['wall_ms']:.2f} ms{per}"]
    lines.extend(_adapter_lines(run))
    if run.get("first_overflow"):
        lines.append(f"first overflow: {_clean(run['first_overflow'])}")
    for key in ("dump_dir", "trace_file", "op_summary_csv"):
        if run.get(key):
            lines.append(f"{key}: {_clean(run[key])}")
    top = costliest(payload["ops"], 5)
    if top:
        lines.append("costliest: " + ", ".join(f"{_clean(op['n'])} {op['us']:.1f} µs" for op in top))
    return lines


def _adapter_lines(run: dict[str, Any]) -> list[str]:
    """Ascend runs: the prediction label, the adapter's outputs, GE's actual decisions (differing first)."""
    lines = []
    if run.get("prediction"):
        lines.append(f"PREDICTED, not measured: {_clean(run['prediction'])}")
    for place in run.get("adapter_outputs") or []:
        state = "" if place.get("exists") else " (not written yet)"
        lines.append(f"{_clean(place['label'])}: {_clean(place['path'])}{state}")
    actual = run.get("actual")
    if actual is None:
        return lines
    if actual.get("error"):
        return lines + [_clean(actual["error"])]
    if not actual.get("files"):
        return lines + ["GE graph dumps are on, but none from this session were found yet."]
    lines.append(f"actual (GE compiled graph, measured on the device): {actual['compared']} ops compared, "
                 f"{actual['differ']} differ, {actual['missing']} predicted device ops not in the dump")
    for row in sorted(actual["rows"], key=lambda r: bool(r.get("same")))[:50]:
        mark = "same" if row.get("same") else "DIFFERS"
        lines.append(f"  {_clean(row['n'])}: predicted {row['pe']} {'/'.join(row['pd'])}, "
                     f"actual {_clean(row['ae'])} {_clean('/'.join(row['ad']))} [{mark}]")
    return lines


def _op_line(payload: dict[str, Any], op: dict[str, Any]) -> str:
    dtype = op["d0"] if op["d0"] == op["d1"] else f"{op['d0']}->{op['d1']}"
    reason = payload["reasons"][op["pr"]] if op["e"] == "HOST" else payload["reasons"][op["xr"]]
    flag = " OVERFLOW" if op.get("ov") else ""
    return f"  {_clean(op['n'])} [{_clean(op['t'])}] {op['e']} {dtype}{flag}: {_clean(reason)}"


def _clean(text: str) -> str:
    """Keep printable text as is; escape control characters (newlines in a name would fake lines)."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text))
