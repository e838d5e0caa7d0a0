"""Collapsing a cell's run reports: one per (session, fetches, plan), times averaged per run."""

from __future__ import annotations

from npu_jupyter.notebook.run_reports import cell_reports, collapse
from npu_jupyter.plan.model import OpDecision, Plan
from npu_jupyter.runtime.report import RunReport


def _plan(*names: str) -> Plan:
    return Plan(ops={n: OpDecision(n, "Add", "device", "AI_CORE", "ok", "float32", "float16", "fp16")
                     for n in names})


class _Session:
    """What the cell hands over: an object with the runtime's ``reports`` list."""

    def __init__(self, reports):
        self.reports = reports


def test_alternating_fetches_collapse_per_fetch_in_first_run_order():
    plan = _plan("a", "b")
    runs = [RunReport(plan, fetches=[f], wall_ms=ms) for f, ms in (("a", 1.0), ("b", 5.0), ("a", 3.0), ("b", 7.0))]
    reports = cell_reports([_Session(runs)])
    assert [(r.fetches, r.steps, r.wall_ms) for r in reports] == [(["a"], 2, 2.0), (["b"], 2, 6.0)]


def test_same_fetches_on_a_replanned_identical_graph_are_one_report_but_other_sessions_are_not():
    first, again = _plan("a"), _plan("a")
    reports = cell_reports([_Session([RunReport(first, fetches=["a"]), RunReport(again, fetches=["a"])]),
                            _Session([RunReport(first, fetches=["a"])])])
    assert [r.steps for r in reports] == [2, 1]


def test_collapse_weights_times_by_steps_and_keeps_every_overflow():
    plan = _plan("a", "b")
    one = RunReport(plan, steps=3, wall_ms=1.0, op_times_us={"a": 10.0}, overflow_ops=["b"], first_overflow="b")
    two = RunReport(plan, steps=1, wall_ms=5.0, op_times_us={"a": 2.0}, overflow_ops=["a", "b"],
                    trace_file="/tmp/trace.json")
    merged = collapse([one, two])
    assert merged.steps == 4 and merged.wall_ms == 2.0
    assert merged.op_times_us == {"a": 8.0}
    assert merged.overflow_ops == ["b", "a"] and merged.first_overflow == "b"
    assert merged.trace_file == "/tmp/trace.json"
