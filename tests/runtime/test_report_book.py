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
    expected = estimate_of(report.plan, g, {"x:0": [16, 64]}, fetches=["total:0"])
    assert expected is not None and report.estimate == expected
    assert "copies the run's 1 fed tensor to the device and 1 fetched tensor back" in expected.block.basis
    assert report.estimate.est_us["mm"] > 0 and report.estimate is report.estimate  # computed once


def _batches(tf, sizes):
    """A report of runs feeding ``sizes`` rows each, and its payload's cost_model basis."""
    from npu_jupyter._display.mime import report_payload

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 8], name="x")
        tf.reduce_sum(tf.matmul(x, tf.ones([8, 4]), name="mm"), name="total")
    with EmulatorSession(NpuConfig(), g) as sess:
        for rows in sizes:
            sess.run("total:0", {"x:0": np.ones((rows, 8), np.float32)})
        report = sess.last_report
    return report, report_payload(report)["cost_model"]["basis"]


def test_an_estimate_says_its_batch_when_the_runs_it_stands_for_fed_other_shapes(tf):
    """Trial (texting_ID0193): batches 64, 64, 64 then 8 folded into one report whose estimate, at the
    first batch, did not say so next to a mean time over all four."""
    report, basis = _batches(tf, [16, 16, 3])
    assert report.steps == 3 and report.fed_shapes == {"x:0": [16, 8]} and report.fed_shapes_varied
    assert "at the shapes one step fed (x:0 [16, 8]): its steps fed other shapes too" in basis
    same, plain = _batches(tf, [16, 16, 16])
    assert not same.fed_shapes_varied and "other shapes" not in plain
