"""The dump sink both stacks write through: the budget decided up front, one stop, one message template."""

from __future__ import annotations

import json

import numpy as np
import pytest

from npu_jupyter._runtime.observe.dump.format import DumpGraph
from npu_jupyter._runtime.observe.dump.sink import DumpSink
from npu_jupyter._runtime.observe.dump.writer import DumpEntry
from npu_jupyter._runtime.report import RunReport


def _entries(size):
    return [DumpEntry("op", "Mul", "output", 0, np.zeros(size, np.float32), "float32")]


def test_a_written_step_is_put_in_the_report_and_sizes_the_next_estimate(tmp_path):
    sink, report, graph = DumpSink(str(tmp_path), 1 << 20, stats_only=False), RunReport(plan=None), DumpGraph()  # type: ignore[arg-type]
    assert sink.last_bytes(graph) is None
    sink.write(report, graph, 0, _entries(4), {"backend": "emulator"})
    assert sink.last_bytes(graph) == 16
    assert report.dump_dir == str(tmp_path) and report.dump.steps == (0,)
    assert report.dump.graph_dir == str(tmp_path)  # graph 0 dumps into dump_path itself
    assert (tmp_path / "step_0" / "manifest.json").exists()


@pytest.mark.parametrize(("unit", "what"), [("step", "graph 0"), ("call", "train_step")])
def test_a_step_over_the_budget_stops_dumping_with_one_message_for_both_stacks(tmp_path, unit, what):
    sink, graph, notes = DumpSink(str(tmp_path), 20, stats_only=False), DumpGraph(), []
    with pytest.warns(RuntimeWarning, match="dump budget exceeded"):
        assert not sink.admit(notes, graph, 0, what, lambda: 44, unit)
    assert notes[0].startswith(f"dump budget exceeded: {unit} 0 of {what} needs about 44 B, 0 B already written")
    assert f"{unit} 0 and later {unit}s are not dumped, earlier {unit}s are complete" in notes[0]
    assert not sink.admit(notes, graph, 1, what, lambda: 0, unit)  # stopped: nothing more, even a small step
    assert notes[1].startswith(f"{unit} 1 of {what} not dumped: dumping stopped earlier (dump budget exceeded")
    skipped = json.loads((tmp_path / "graphs.json").read_text())["graphs"][0]["skipped"]
    assert sorted(skipped) == ["0", "1"]


@pytest.mark.parametrize(("unit", "what"), [("step", "graph 0"), ("call", "train_step")])
def test_a_first_step_over_the_budget_is_named_by_its_graph_in_another_graphs_report(tmp_path, unit, what):
    """A first step has no estimate, so the writer refuses it; the reason names it as ``admit`` would.

    A ModelZoo ResNet's train_step overran the budget on call 0; its valid_step's report then quoted
    "step 0 needs 2.2 GiB", which read as valid_step's own call 0.
    """
    sink, report, other = DumpSink(str(tmp_path), 20, stats_only=False), RunReport(plan=None), DumpGraph(id=1)  # type: ignore[arg-type]
    named = {} if unit == "step" else {"what": what, "unit": unit}  # a session's graph: the default name
    with pytest.warns(RuntimeWarning, match="dump budget exceeded"):
        sink.write(report, DumpGraph(), 0, _entries(11), {}, **named)  # type: ignore[arg-type]
    assert report.warnings[0].startswith(f"dump budget exceeded: {unit} 0 of {what} needs 44 B, 0 B already written")
    notes: list[str] = []
    assert not sink.admit(notes, other, 0, "valid_step", lambda: 0, "call")
    assert notes == [f"call 0 of valid_step not dumped: dumping stopped earlier ({report.warnings[0]})"]


def test_statistics_only_and_initializer_steps_spend_no_budget(tmp_path):
    def never():
        raise AssertionError("the size of a statistics-only step is never estimated")

    assert DumpSink(str(tmp_path), 0, stats_only=True).admit([], DumpGraph(), 0, "graph 0", never)
    sink = DumpSink(str(tmp_path), 0, stats_only=False)
    assert sink.admit([], DumpGraph(role="initializer"), 0, "graph 0", never)
