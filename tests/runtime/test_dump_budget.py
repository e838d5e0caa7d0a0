"""The dump size budget is decided before a step runs, and a skipped step is named, never hidden."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from npu_jupyter._display import text
from npu_jupyter._display.mime import report_payload
from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.observe.dump import DumpWriter, load_dump
from npu_jupyter._runtime.session.emulator import EmulatorSession


def _graph(tf):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [256, 256], name="x")
        w = tf.compat.v1.get_variable("w", initializer=tf.ones([256, 1]))
        y = tf.matmul(x, w, name="y")
        init = tf.compat.v1.global_variables_initializer()
    return g, x, y, init


def test_a_step_over_budget_is_skipped_before_it_is_written_and_named_in_the_report(tf, hand, tmp_path, monkeypatch):
    monkeypatch.setenv("NPU_JUPYTER_DUMP_BUDGET", "64KB")  # the init graph fits, one 256x256 step does not
    written: list[int] = []
    real = DumpWriter.write_step

    def spy(self, step, entries, meta=None, graph=None, **kw):
        written.append(sum(np.asarray(e.value).nbytes for e in entries))
        return real(self, step, entries, meta, graph, **kw)

    monkeypatch.setattr(DumpWriter, "write_step", spy)
    g, x, y, init = _graph(tf)
    with EmulatorSession(
        NpuConfig(enable_dump=True, dump_path=str(tmp_path)), g, plan_fn=hand.plan_fn()
    ) as sess, warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        sess.run(init)
        sess.run(y, {x: np.ones((256, 256), np.float32)})
        report = sess.last_report
    assert all(n <= 64 * 1024 for n in written), "nothing over budget was gathered for writing"
    (skipped,) = report.dump.skipped
    assert skipped.step == 0 and "step 0 of graph 1" in skipped.reason
    payload = report_payload(report)  # every view says which step was not written, and why
    assert payload["run"]["dump_skipped"] == [{"step": 0, "reason": skipped.reason}]
    assert "Dump skipped step 0" in text.render(payload)
    with pytest.warns(RuntimeWarning, match="no dumped step"):
        dump = load_dump(tmp_path)
    assert dump.graph_id == 1 and dump.steps == [] and 0 in dump.skipped  # not the initializer graph
    with pytest.raises(KeyError, match="was not dumped: dump budget"):
        dump[0]
    assert dump.graph(0).steps == [0]
