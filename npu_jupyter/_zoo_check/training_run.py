"""Which of an entry's runs is its training step, with every run of that step folded into one report.

An entry's session makes many runs: the initialiser (once, the largest graph), the train step
(``steps`` times), and -- with queue runners -- small enqueue graphs run from other threads far more
often. The emulator folds only *consecutive* runs of the same fetches into one report, so a train step
interleaved with enqueue runs is spread over many reports. Here runs of one session with the same
fetches and plan are folded (steps summed, CPU time averaged per step, the worst drift per op by relative
RMSE, the first non-finite finding kept), and the training step is the largest run graph made at least
``steps`` times.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from npu_jupyter._runtime.report_records import OverflowCheck

if TYPE_CHECKING:
    from npu_jupyter._runtime.report import RunReport
    from npu_jupyter._tf_types import Graph
    from npu_jupyter._zoo_check.entry import ZooRun


def training_report(npu: ZooRun) -> tuple[RunReport, Graph | None] | None:
    """(folded report, its graph) of the entry's training step; None when it made no emulated run."""
    candidates: list[tuple[RunReport, Graph | None]] = []
    for session in npu.sessions:
        groups: dict[tuple[Any, ...], list[RunReport]] = {}
        for report in session.reports:
            groups.setdefault((tuple(report.fetches), id(report.plan)), []).append(report)
        candidates.extend((fold(g), npu.graphs.get(id(g[0].plan), session.graph)) for g in groups.values())
    for emulation in npu.emulations:
        candidates.extend(
            (report, npu.graphs.get(id(report.plan)))
            for report in emulation.reports.values()
            # plan is None for a function with no plannable graph (_runtime/functions/emulator.py)
            if report.plan is not None and report.steps
        )
    if not candidates:
        return None

    def rank(i: int) -> tuple[bool, int, int, int]:
        report = candidates[i][0]
        planned = len(report.plan.ops) if report.plan is not None else 0  # a session's report: always planned
        return (report.steps >= npu.steps, planned, report.steps, i)

    return candidates[max(range(len(candidates)), key=rank)]


def fold(reports: list[RunReport]) -> RunReport:
    """One report for several reports of the same run graph."""
    if len(reports) == 1:
        return reports[0]
    steps = sum(max(1, r.steps) for r in reports)
    wall = sum(r.wall_ms * max(1, r.steps) for r in reports) / steps
    from npu_jupyter._runtime.observe.observers import keep_worse

    drift: dict[str, dict[str, float]] = {}
    for r in reports:
        for op, values in r.drift.items():
            keep_worse(drift, op, values)  # the rank a session's steps keep their worst by (rel. RMSE)
    return dataclasses.replace(
        reports[-1],
        steps=steps,
        wall_ms=wall,
        drift=drift,
        first_overflow=next((r.first_overflow for r in reports if r.first_overflow), None),
        overflow_check=OverflowCheck.folded(r.overflow_check for r in reports),
        non_finite=next((r.non_finite for r in reports if r.non_finite is not None), None),
    )
