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


def test_an_ascend_reports_time_says_it_is_the_hosts_wall_time_of_session_run_in_every_view(tf):
    """Review: the time, taken on the host around session.run, read "measured on the device"."""
    from npu_jupyter._display import html, text
    from npu_jupyter._display.mime import report_payload

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        y = tf.multiply(x, 2.0, name="y")
    cfg = NpuConfig()
    with AscendSession(cfg, graph=g, config=cfg.to_config_proto()) as sess:
        for _ in range(3):
            sess.run(y, {x: [1.0, 2.0]})
        payload = report_payload(sess.last_report)
    host = (
        "wall-clock time of session.run measured on the host while the device ran the graph (not a device kernel time)"
    )
    assert payload["labels"]["wall_ms"].startswith("mean per step over 3 steps: ")
    assert payload["labels"]["wall_ms"].endswith(host)
    for view in (text.render(payload), html.render(payload)):
        assert "measured on the device" not in view and "Wall time is measured on the device" not in view
        assert f"3 steps · {payload['run']['wall_ms']:.2f} ms (mean per step over 3 steps: " in view
        assert "not a device kernel time" in view


def test_a_per_op_time_of_a_non_emulated_report_is_not_called_a_device_time():
    """The ascend backend reads no per-op times; were one in a payload it would not say "device" unread."""
    from npu_jupyter._display.facts import time_tag

    assert time_tag({"run": {"backend": "ascend"}}) == "measured"
    assert time_tag({"run": {"backend": "emulator"}}) == "CPU"


def test_an_ascend_report_is_estimated_as_the_emulators_report_of_the_same_run(tf):
    """At the batch the run fed, with the fed tensor and the fetch copied every step, like the emulator's."""
    import numpy as np

    from npu_jupyter._runtime.session.emulator import EmulatorSession

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 64], name="x")
        tf.reduce_sum(tf.matmul(x, tf.ones([64, 32]), name="mm"), name="total")
    cfg = NpuConfig(precision_mode="allow_mix_precision")
    batch, other = np.ones((16, 64), np.float32), np.ones((3, 64), np.float32)
    with AscendSession(cfg, graph=g, config=cfg.to_config_proto()) as ascend, EmulatorSession(cfg, g) as emulated:
        for sess in (ascend, emulated):
            sess.run("total:0", {"x:0": batch})
            sess.run("total:0", {"x:0": other})  # a last partial batch: the estimate stays at the first
        on_ascend, here = ascend.last_report, emulated.last_report
    assert on_ascend.fed_shapes == here.fed_shapes == {"x:0": [16, 64]}
    assert on_ascend.fed_shapes_varied and here.fed_shapes_varied
    assert on_ascend.estimate.block == here.estimate.block
    assert "1 fed tensor to the device and 1 fetched tensor back" in on_ascend.estimate.block.basis
