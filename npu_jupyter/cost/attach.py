"""Put the cost model's estimate on a run report, in the slots the report payload reads.

``RunReport.extra["cost_model"]`` (the per-step block) and ``extra["est_us"]`` (per op) are what
``display/mime.py`` renders as the estimated NPU step time, memory and per-op estimates, labelled as
estimates (docs/report-schema.md).
"""

from __future__ import annotations

import dataclasses
from typing import Any


def with_estimate(report: Any, graph: Any, memo: dict[int, Any] | None = None) -> Any:
    """A copy of ``report`` carrying the estimate of its plan on ``graph``; the report itself if none.

    ``memo`` (by plan id) lets reports of one plan share one estimate. A graph the model cannot read
    (no ``tf.Graph``) leaves the report as it is: the estimate is an extra, never a reason to fail.
    """
    if graph is None or getattr(report, "plan", None) is None:
        return report
    from npu_jupyter.cost.roofline import estimate

    key = id(report.plan)
    cost = memo.get(key) if memo is not None else None
    if cost is None:
        try:
            cost = estimate(report.plan, graph)
        except (TypeError, ValueError, KeyError):
            return report
        if memo is not None:
            memo[key] = cost
    extra = dict(report.extra)
    extra["cost_model"] = cost.payload()
    extra["est_us"] = cost.est_us()
    return dataclasses.replace(report, extra=extra)
