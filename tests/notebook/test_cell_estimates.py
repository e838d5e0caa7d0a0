"""Every report of a %%npu cell carries the cost model's estimate in the payload's slots."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from npu_jupyter._notebook.run_reports import cell_reports
from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.session.emulator import EmulatorSession


def test_cell_reports_carry_the_estimated_step_and_per_op_estimates():
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [16, 64], name="x")
        w = tf.constant(np.ones((64, 32), np.float32), name="w")
        tf.reduce_sum(tf.nn.relu(tf.matmul(x, w, name="mm")), name="total")
    with EmulatorSession(NpuConfig(precision_mode="force_fp16"), g) as sess:
        for _ in range(2):
            sess.run("total:0", {"x:0": np.ones((16, 64), np.float32)})
        [report] = cell_reports([sess])
    block = report.estimate.block
    assert block.step_ms > 0 and 0 < block.memory_ratio_fp32 < 1
    assert "roofline" in block.basis and 0 < block.launch_share <= 1
    assert report.estimate.est_us["mm"] > 0
    assert "w" not in report.estimate.est_us  # constants cost nothing and get no estimate
    assert report.steps == 2


def test_the_sessions_last_report_carries_the_estimate_the_cell_renders(ip):
    """Issue 21: ``%%npu`` attached the estimate at display time, so ``sess.last_report`` had none."""
    from IPython.utils.capture import capture_output

    from npu_jupyter._display.mime import MIME_TYPE, report_payload

    ip.run_cell(
        "import numpy as np, tensorflow as tf\n"
        "g = tf.Graph()\n"
        "with g.as_default():\n"
        "    x = tf.compat.v1.placeholder(tf.float32, [None, 64], name='x')\n"
        "    w = tf.constant(np.ones((64, 32), np.float32), name='w')\n"
        "    total = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w, name='mm')), name='total')\n"
    )
    with capture_output() as cap:
        ip.run_cell_magic(
            "npu",
            "--precision force_fp16",
            "sess = tf.compat.v1.Session(graph=g)\nfor _ in range(2):\n    sess.run(total, {x: np.ones((32, 64), np.float32)})\n",
        )
    (shown,) = [out.data[MIME_TYPE] for out in cap.outputs if MIME_TYPE in out.data]
    report = ip.user_ns["sess"].last_report
    estimate = report.estimate
    assert estimate is not None and estimate.block is not None and estimate.block.step_ms > 0
    assert report_payload(report)["cost_model"] == shown["cost_model"]  # the same block, at the fed batch of 32
    shown_est = {op["n"]: op["est_us"] for op in shown["ops"] if "est_us" in op}
    assert shown_est and shown_est == {n: round(us, 3) for n, us in estimate.est_us.items() if n in shown_est}
    assert set(shown_est) == set(estimate.est_us)
