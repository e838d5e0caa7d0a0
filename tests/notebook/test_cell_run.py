"""CellRun: a %%npu cell checked whole, then run; its reports come back and nothing is displayed.

(Tests of ``npu_jupyter/_notebook/cell_run.py``; the magic that shows the reports is tested in
test_cell_magic.py.)
"""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from npu_jupyter._notebook.cell_run import CellRun
from npu_jupyter._notebook.magics import CELL_PARSER
from npu_jupyter._notebook.state import last_reports
from npu_jupyter._options.config import NpuConfig

tf = pytest.importorskip("tensorflow")

RUNS_THEN_RAISES = """
import numpy as np
import tensorflow as tf
g = tf.Graph()
with g.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [2, 4], name="x")
    y = tf.matmul(x, tf.ones([4, 4]), name="mm")
with tf.compat.v1.Session(graph=g) as sess:
    sess.run(y, feed_dict={x: np.ones((2, 4), np.float32)})
    sess.run(y, feed_dict={x: np.ones((2, 4), np.float32)})
"""


def _run(ip, line: str, cell: str) -> CellRun:
    snapshot = NpuConfig(precision_mode="allow_fp32_to_fp16").snapshot()
    return CellRun(ip, line, cell, snapshot, CELL_PARSER.parse(line, snapshot), "emulator")


def test_run_returns_the_reports_and_the_value_and_displays_nothing(ip):
    before = last_reports()
    with capture_output() as cap:
        result = _run(ip, "--precision force_fp16", RUNS_THEN_RAISES + "'done'").run()
    assert cap.outputs == [] and cap.stdout == ""  # showing them is the magic's job
    assert last_reports() == before  # and so is recording them for npu_jupyter.last_reports()
    [report] = result.reports  # two runs of the same fetch: one report of two steps
    assert report.steps == 2 and report.plan.precision_mode == "force_fp16"
    assert result.value == "done" and result.error is None and result.made_sessions


def test_an_error_of_the_body_comes_back_with_the_reports_of_the_runs_before_it(ip):
    with capture_output() as cap:
        result = _run(ip, "", RUNS_THEN_RAISES + "raise ValueError('after two runs')").run()
    assert cap.outputs == []
    assert isinstance(result.error, ValueError) and str(result.error) == "after two runs"
    assert [report.steps for report in result.reports] == [2]


def test_a_refused_cell_is_refused_when_built_and_leaves_no_folder(ip, tmp_path):
    folder = tmp_path / "new" / "dumps"
    ip.user_ns["ran"] = False
    with pytest.raises(UsageError, match=r"(?s)dump_step.*The cell was not run"):
        _run(ip, f"--dump {folder} --dump-step 5-3", "ran = True")
    assert not folder.exists() and ip.user_ns["ran"] is False


def test_reference_on_the_ascend_backend_is_a_note_for_the_caller_not_a_print(ip):
    line = "--reference"
    with capture_output() as cap:
        snapshot = NpuConfig().snapshot()
        run = CellRun(ip, line, "x = 1", snapshot, CELL_PARSER.parse(line, snapshot), "ascend")
    assert cap.stdout == ""
    [note] = run.notes
    assert "emulator only" in note
