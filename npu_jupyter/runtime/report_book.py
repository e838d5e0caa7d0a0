"""The reports of an emulator session: one per run, or several runs of the same fetches folded into one.

``last_report`` is the last run made from the thread that created the session (queue-runner threads
run small enqueue graphs all the time; the report a user means is the one of their own ``sess.run``),
the last run overall until that thread runs. Every run's report is in ``reports`` (the last 1000).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from npu_jupyter.runtime.fetch_map import fetch_values
from npu_jupyter.runtime.report import RunReport
from npu_jupyter.runtime.run_notes import lowered_but_unrounded, soft_placement_note
from npu_jupyter.runtime.step_record import StepRecord, add_time

if TYPE_CHECKING:
    from npu_jupyter.runtime.run_graph import RunGraph
    from npu_jupyter.tf_types import Graph

_KEEP = 1000


class ReportBook:
    """Starts, folds and remembers the RunReports of one session."""

    def __init__(self, graph: Graph) -> None:
        self._graph = graph
        self._owner_thread = threading.get_ident()
        self._owner_last: RunReport | None = None
        self._last_any: RunReport | None = None
        self.reports: list[RunReport] = []

    def in_owner_thread(self) -> bool:
        """True when the calling thread created the session (the user's runs, not a queue runner's)."""
        return threading.get_ident() == self._owner_thread

    @property
    def last(self) -> RunReport | None:
        """The last report of the session owner's thread, else of any thread (None before a run)."""
        return self._owner_last if self._owner_last is not None else self._last_any

    def record(self, record: StepRecord, step: int, names: list[str], run: RunGraph) -> RunReport:
        """Start a report, or fold this step into the last one when the fetches and plan are the same.

        ``names`` are the run's fetches (user names, flattening order) and ``step`` its session-wide run
        count (``first_step``/``last_step``); the time and the fetched values are the record's.
        """
        report = self._fold_or_start(record, step, names, run)
        add_time(report, record)
        self._last_any = report
        if threading.get_ident() == self._owner_thread:
            self._owner_last = report
        return report

    def _fold_or_start(self, record: StepRecord, step: int, names: list[str], run: RunGraph) -> RunReport:
        """The last run's report when the fetches and plan are the same, else a new one (0 steps so far)."""
        plan, fetch_key, results = record.plan, tuple(names), list(record.outputs)
        last = self._last_any
        if last is not None and last.plan is plan and last.extra.get("_fetch_key") == fetch_key:
            last.extra["last_step"] = step
            last.extra["values"] = fetch_values(names, results)
            return last
        report = RunReport(plan=plan, backend="emulator", fetches=list(names), steps=0, wall_ms=0.0)  # type: ignore[arg-type]
        report.emulation = {op: how for op, how in run.emulation().items() if plan is not None and op in plan.ops}
        note = lowered_but_unrounded(plan, report.emulation, self._graph)
        if note:
            report.warnings.append(note)  # a plan that lowers precision never runs unrounded silently
        soft = soft_placement_note(plan, self._graph)
        if soft:
            report.warnings.append(soft)
        report.extra.update(
            _fetch_key=fetch_key,
            first_step=step,
            last_step=step,
            values=fetch_values(names, results),
        )
        self.reports.append(report)
        if len(self.reports) > _KEEP:
            del self.reports[: len(self.reports) - _KEEP]
        return report
