"""The reports of an emulator session: one per run, or several runs of the same fetches folded into one.

``last_report`` is the last run made from the thread that created the session (queue-runner threads
run small enqueue graphs all the time; the report a user means is the one of their own ``sess.run``),
the last run overall until that thread runs. Every run's report is in ``reports`` (the last 1000).
"""

from __future__ import annotations

import dataclasses
import threading
from typing import TYPE_CHECKING

from npu_jupyter._runtime.observe.fetch_map import FeedDict, feed_shapes, fetch_values
from npu_jupyter._runtime.observe.run_notes import lowered_but_unrounded, soft_placement_note
from npu_jupyter._runtime.observe.step_record import StepRecord, add_time
from npu_jupyter._runtime.report import RunReport
from npu_jupyter._runtime.report_records import SessionRecord
from npu_jupyter.cost.attach import Memo, PendingEstimate
from npu_jupyter.cost.stand_ins import stand_in_note, stand_ins

if TYPE_CHECKING:
    from npu_jupyter._runtime.session.run_graph import RunGraph
    from npu_jupyter._tf_types import Graph

_KEEP = 1000


class ReportBook:
    """Starts, folds and remembers the RunReports of one session."""

    def __init__(self, graph: Graph) -> None:
        self._graph = graph
        self._estimates: Memo = {}  # (plan id, fed shapes) -> the cost model's estimate, shared by reports
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

    def record(
        self, record: StepRecord, step: int, names: list[str], run: RunGraph, feed_dict: FeedDict | None = None
    ) -> RunReport:
        """Start a report, or fold this step into the last one when the fetches and plan are the same.

        ``names`` are the run's fetches (user names, flattening order) and ``step`` its session-wide run
        count (``first_step``/``last_step``); the time and the fetched values are the record's.
        ``feed_dict`` gives a new report the shapes its run fed: the cost model's estimate, attached
        here and computed when the report is first read, is at that batch.
        """
        report = self._fold_or_start(record, step, names, run, feed_dict)
        add_time(report, record)
        self._last_any = report
        if threading.get_ident() == self._owner_thread:
            self._owner_last = report
        return report

    def _fold_or_start(
        self, record: StepRecord, step: int, names: list[str], run: RunGraph, feed_dict: FeedDict | None
    ) -> RunReport:
        """The last run's report when the fetches and plan are the same, else a new one (0 steps so far)."""
        plan, fetch_key = record.plan, tuple(names)
        assert plan is not None  # noqa: S101 - narrows the type: a session step always runs under its plan
        last = self._last_any
        values = fetch_values(names, list(record.outputs))
        if last is not None and last.plan is plan and last.session is not None and last.session.fetch_key == fetch_key:
            last.session = dataclasses.replace(last.session, last_step=step, values=values)
            if not last.fed_shapes_varied and last.fed_shapes is not None:
                last.fed_shapes_varied = feed_shapes(feed_dict) != last.fed_shapes
            return last
        report = RunReport(plan=plan, backend="emulator", fetches=list(names), steps=0, wall_ms=0.0)
        report.emulation = {op: how for op, how in run.emulation().items() if op in plan.ops}
        note = lowered_but_unrounded(plan, report.emulation, self._graph)
        if note:
            report.warnings.append(note)  # a plan that lowers precision never runs unrounded silently
        soft = soft_placement_note(plan, self._graph)
        if soft:
            report.warnings.append(soft)
        report.session = SessionRecord(fetch_key, first_step=step, last_step=step, values=values)
        report.fed_shapes = feed_shapes(feed_dict)
        report.cost = PendingEstimate(plan, self._graph, report.fed_shapes, self._estimates, report.fetches)
        stood_in = stand_in_note(stand_ins(plan, self._graph))  # emulated npu_ops.dropout: not the device's ops
        if stood_in:
            report.notes.append(stood_in)
        self.reports.append(report)
        if len(self.reports) > _KEEP:
            del self.reports[: len(self.reports) - _KEEP]
        return report
