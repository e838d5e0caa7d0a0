"""Put the cost model's estimate on a run report, in the slots the report payload reads.

``RunReport.extra["cost_model"]`` (the per-step block) and ``extra["est_us"]`` (per op) are what
``display/mime.py`` renders as the estimated NPU step time, memory and per-op estimates, labelled as
estimates (docs/report-schema.md). A report of a run is estimated at the shapes the run fed
(``extra["fed_shapes"]``); a plan the adapter would refuse to compile (``Plan.errors``) gets no time:
its block says it is refused.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def refused_block(plan: Any) -> dict[str, Any] | None:
    """The ``cost_model`` block of a plan the adapter would not compile (None when it would)."""
    errors = list(getattr(plan, "errors", None) or [])
    if not errors:
        return None
    first = str(errors[0])
    first = first if len(first) <= 200 else first[:199] + "…"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return {
        "step_ms": None,
        "memory_bytes": None,
        "step_ratio_fp32": None,
        "memory_ratio_fp32": None,
        "basis": f"refused: the adapter would not compile this graph, so no step time is estimated: {first}{more}",
    }


def estimate_slots(report: Any, graph: Any, memo: dict[Any, Any] | None = None) -> dict[str, Any] | None:
    """``{"cost_model": ..., "est_us": ...}`` for ``report`` on ``graph``; None when it cannot be estimated.

    ``memo`` (by plan id and fed shapes) lets reports of one plan share one estimate. A graph the model
    cannot read (no ``tf.Graph``) gives None: the estimate is an extra, never a reason to fail.
    """
    plan = getattr(report, "plan", None)
    if graph is None or plan is None:
        return None
    refused = refused_block(plan)
    if refused is not None:
        return {"cost_model": refused, "est_us": {}}
    from npu_jupyter.cost.roofline import estimate

    fed = report.extra.get("fed_shapes") or None
    key = (id(plan), tuple(sorted((name, tuple(shape)) for name, shape in (fed or {}).items())))
    cost = memo.get(key) if memo is not None else None
    if cost is None:
        try:
            cost = estimate(plan, graph, fed_shapes=fed)
        except Exception:  # noqa: BLE001 - the estimate is an extra; reading a report must never fail for it
            return None
        if memo is not None:
            memo[key] = cost
    return {"cost_model": cost.payload(), "est_us": cost.est_us()}


def with_estimate(report: Any, graph: Any, memo: dict[Any, Any] | None = None) -> Any:
    """A copy of ``report`` carrying the estimate of its plan on ``graph``; the report itself if none."""
    slots = estimate_slots(report, graph, memo)
    if slots is None:
        return report
    return dataclasses.replace(report, extra={**report.extra, **slots})


def attach_estimate(report: Any, graph: Any, memo: dict[Any, Any] | None = None) -> None:
    """Put the estimate on ``report`` itself, once (``session().last_report`` shows what ``%%npu`` does)."""
    if report is None or "cost_model" in report.extra:
        return
    slots = estimate_slots(report, graph, memo)
    if slots is not None:
        report.extra.update(slots)
