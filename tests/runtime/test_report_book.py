"""A session's reports carry their run's records and the cost model's estimate from where they are built."""

from __future__ import annotations

import numpy as np

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.session.emulator import EmulatorSession
from npu_jupyter.cost.attach import PendingEstimate, estimate_of


def test_last_report_carries_the_estimate_at_the_batch_its_first_run_fed(tf):
    """Issue 21: the estimate was attached when a cell displayed the report, not on ``last_report``."""
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 64], name="x")
        w = tf.constant(np.ones((64, 32), np.float32), name="w")
        tf.reduce_sum(tf.matmul(x, w, name="mm"), name="total")
    with EmulatorSession(NpuConfig(precision_mode="force_fp16"), g) as sess:
        for _ in range(3):
            sess.run("total:0", {"x:0": np.ones((16, 64), np.float32)})
        report = sess.last_report
    assert report.steps == 3 and report.session is not None
    assert (report.session.first_step, report.session.last_step) == (0, 2)
    assert report.timing.total_ms >= report.timing.max_ms >= report.timing.min_ms > 0
    assert report.fed_shapes == {"x:0": [16, 64]} and isinstance(report.cost, PendingEstimate)
    expected = estimate_of(report.plan, g, {"x:0": [16, 64]})
    assert expected is not None and report.estimate == expected
    assert report.estimate.est_us["mm"] > 0 and report.estimate is report.estimate  # computed once
