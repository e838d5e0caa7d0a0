"""The report MIME bundle: one versioned JSON payload, rendered three ways.

A :class:`~npu_jupyter._plan.model.Plan` or :class:`~npu_jupyter._runtime.report.RunReport` becomes the
JSON object described in ``docs/report-schema.md`` (drawn by the JupyterLab extension), and the
``text/html`` and ``text/plain`` fallbacks are rendered *from that payload*, so every frontend shows the
same facts and there is one place where user data enters the output.

Two properties matter more than completeness:

* **Bounded** — a 7k-op training graph must stay under 1 MB (notebooks are saved with their outputs).
  Keys are short, reason texts are stored once and referenced by index, and when the payload is still
  over budget the ops a person needs first (overflowed, left the device, changed precision) are kept and
  ``truncated`` is set.
* **Deterministic** — no timestamps, ids or set iteration: the same plan gives byte-identical output,
  so nbval can compare notebook outputs.

The payload's fields are written by :mod:`npu_jupyter._display.payload` (its ``run`` block by
:mod:`npu_jupyter._display.run_payload`); this module chooses the ops that fit and bundles the views.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from typing import TYPE_CHECKING, Any, cast

from npu_jupyter._display.drift import worst_drift_names
from npu_jupyter._display.payload import SCHEMA, VERSION, build_payload
from npu_jupyter._display.run_payload import shown_path

if TYPE_CHECKING:  # pragma: no cover - typing only; keeps this module import-light
    from npu_jupyter._display.payload_types import Report
    from npu_jupyter._plan.model import OpDecision, Plan
    from npu_jupyter._runtime.report import RunReport

MIME_TYPE = "application/vnd.npu-jupyter.report+json"
#: The title of a run report that has no plan: what ran is shown, no op is.
NO_PLAN = "no plan (none of its functions had a graph the planner could read)"
BUDGET_BYTES = 1_000_000


def report_payload(obj: Plan | RunReport, *, budget: int = BUDGET_BYTES) -> Report:
    """The ``application/vnd.npu-jupyter.report+json`` payload of a plan or a run report.

    Parameters
    ----------
    obj : Plan or RunReport
        What to report. A RunReport adds per-op times, drift and overflow flags, and a ``run`` block.
    budget : int
        Upper bound in bytes of the compact JSON encoding. Ops are dropped (most interesting kept,
        ``truncated`` set) until the payload fits.

    """
    plan, run = _split(obj)
    order = list(plan.ops)
    keep = order
    payload = build_payload(plan, run, keep)
    if _size(payload) <= budget:
        return payload
    ranked = _ranked(plan, run)
    fixed = _size(build_payload(plan, run, []))
    costs = {name: _op_cost(plan.ops[name]) for name in ranked}
    count = _prefix_within(ranked, costs, budget - fixed)
    while True:
        chosen = set(ranked[:count])
        keep = [name for name in order if name in chosen]
        payload = build_payload(plan, run, keep, truncated=True)
        if _size(payload) <= budget or count == 0:
            return payload
        count = int(count * 0.9)


def mimebundle(obj: Plan | RunReport, *, detail: str | None = None) -> dict[str, Any]:
    """``_repr_mimebundle_`` of Plan and RunReport: the JSON payload plus HTML and text fallbacks.

    ``detail`` is ``"summary"`` (interesting ops first, the rest collapsed and capped) or ``"full"``
    (every op); ``None`` uses the session default that ``%config NpuMagics.detail`` sets. A run that
    only initialised a dataset iterator is one line (:mod:`~npu_jupyter._display.brief`), no payload.
    """
    from npu_jupyter._display import html, text
    from npu_jupyter._display.brief import brief_line

    line = brief_line(obj)  # a run that only initialised a dataset iterator: one line, no op table
    if line is not None:
        return {"text/plain": line, "text/html": f'<div style="opacity:.75">{escape(line)}</div>'}
    payload = report_payload(obj)
    level = detail or html.default_detail()
    return {
        MIME_TYPE: payload,
        "text/html": html.render(payload, detail=level),
        "text/plain": text.render(payload, detail=level),
    }


def _split(obj: object) -> tuple[Plan, RunReport | None]:
    """Return (plan, run report or None); anything else is a programming error worth naming."""
    from npu_jupyter._plan.model import Plan

    if isinstance(obj, Plan):
        return obj, None
    plan = getattr(obj, "plan", None)
    if isinstance(plan, Plan):  # a RunReport (or a report type of the same shape)
        return plan, cast("RunReport", obj)
    if plan is None and type(obj).__name__ == "RunReport":  # a traced function with no plannable graph
        return Plan(ops={}, title=NO_PLAN), cast("RunReport", obj)
    raise TypeError(f"report_payload() takes a Plan or a RunReport, not {type(obj).__name__}")


def _size(payload: Mapping[str, Any]) -> int:
    """Bytes of the compact, ASCII-escaped encoding: the upper bound of what a notebook stores."""
    return len(json.dumps(payload, separators=(",", ":")))


def _op_cost(decision: OpDecision) -> int:
    """Rough bytes one op entry adds (name, type, fixed keys, a few input indices)."""
    return len(decision.name) + len(decision.op_type) + 90 + 6 * len(decision.inputs)


def _prefix_within(ranked: list[str], costs: dict[str, int], room: int) -> int:
    """How many of the ranked ops fit into ``room`` bytes."""
    used = 0
    for index, name in enumerate(ranked):
        used += costs[name]
        if used > room:
            return index
    return len(ranked)


def _ranked(plan: Plan, run: RunReport | None) -> list[str]:
    """Op names, most interesting first: overflowed, computing on the host, precision changed, host
    constants, AI CPU, then the rest slowest first.

    Ties keep topological order (``sorted`` is stable), so the choice is deterministic.
    """
    overflow = set(run.overflow_ops) if run else set()
    overflow |= set(worst_drift_names(plan, run)) if run else set()  # the ops the "Largest drift" line names
    times = run.op_times_us if run else {}

    def rank(item: tuple[int, str]) -> tuple[int, float, int]:
        position, name = item
        d = plan.ops[name]
        if name in overflow:
            tier = 0
        elif d.engine == "HOST" and d.op_type not in ("Const", "Placeholder"):
            tier = 1
        elif d.dtype_before != d.dtype_after:
            tier = 2
        elif d.engine == "HOST":
            tier = 3
        elif d.engine == "AI_CPU":
            tier = 4
        else:
            tier = 5
        return tier, -float(times.get(name, 0.0)), position

    return [name for _, name in sorted(enumerate(plan.ops), key=rank)]


__all__ = ["BUDGET_BYTES", "MIME_TYPE", "SCHEMA", "VERSION", "mimebundle", "report_payload", "shown_path"]
