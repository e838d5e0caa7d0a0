"""The ascend backend's session class (run here on plain TF: it needs npu_bridge only to offload)."""

from __future__ import annotations

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.ascend.backend import AscendSession


def test_ascend_session_is_a_real_tf_session_that_records_reports(tf):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        y = tf.multiply(x, 2.0, name="y")
    cfg = NpuConfig(precision_mode="allow_mix_precision")
    with AscendSession(cfg, graph=g, config=cfg.to_config_proto()) as sess:
        assert isinstance(sess, tf.compat.v1.Session)
        for _ in range(3):
            assert sess.run(y, {x: [1.0, 2.0]}).tolist() == [2.0, 4.0]
        report = sess.last_report
        assert report.backend == "ascend" and report.steps == 3 and report.fetches == ["y:0"]
        assert "y" in report.plan.ops and report.predicted
        # the cost model's estimate is attached where the report is built, as %%npu shows it
        assert report.estimate is not None and report.estimate.block is not None
        opt = sess._config.graph_options.rewrite_options.custom_optimizers[0]
        assert opt.name == "NpuOptimizer"
