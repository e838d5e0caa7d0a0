"""Every report of a %%npu cell carries the cost model's estimate in the payload's slots."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from npu_jupyter.notebook.run_reports import cell_reports
from npu_jupyter.options.config import NpuConfig
from npu_jupyter.runtime.emulator import EmulatorSession


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
