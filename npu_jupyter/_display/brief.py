"""One line, not a full report, for a run that only initialised a dataset iterator.

``sess.run(iterator.initializer)`` runs a handful of dataset ops the adapter's data pre-processing pass
keeps on the host. Its full report read "NPU step time 0.000 ms" and a table of host ops all giving one
reason: noise above the training step's report. Such a run is named in one line instead, by the
report's ``str()``, its notebook display and a ``%%npu`` cell's "also ran" line. A run that has a
warning, an error or a non-finite finding keeps its full report: a one-liner must hide no claim.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from npu_jupyter._runtime.report import RunReport

#: What a one-line iterator run says it was, beside its ops.
ITERATOR_INIT = "dataset iterator initialisation"


def is_iterator_init_run(report: RunReport) -> bool:
    """True for a run that only initialised a dataset iterator (:func:`~.initializers.is_iterator_init_plan`)."""
    from npu_jupyter._runtime.observe.initializers import is_iterator_init_plan

    plan = report.plan
    return plan is not None and report.function is None and is_iterator_init_plan(plan, report.fetches)


def brief_line(report: object) -> str | None:
    """The one line standing for an iterator-initialisation run with nothing to flag, else None."""
    from npu_jupyter._runtime.report import RunReport

    if not isinstance(report, RunReport) or not is_iterator_init_run(report):
        return None
    plan = report.plan
    if plan is None or plan.errors or plan.warnings or report.warnings or report.non_finite is not None:
        return None
    runs = f", {report.steps} runs" if report.steps > 1 else ""
    return (
        f"Run of {', '.join(report.fetches)}: {ITERATOR_INIT} only ({len(plan.ops)} ops{runs}), all predicted "
        "by the planner to stay on the host (the adapter's data pre-processing pass): nothing runs on the NPU"
    )
