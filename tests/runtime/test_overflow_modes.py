"""dump_debug_mode=atomic_overflow watches AI Core ops, not an unsourced list of "atomic" op types."""

from __future__ import annotations

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.session.emulator import EmulatorSession


def test_atomic_overflow_flags_an_ai_core_op_outside_any_hand_made_atomic_list(tf, hand, tmp_path):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        big = tf.multiply(x, 1000.0, name="big")  # 1e5 overflows float16
        tf.reduce_max(big, name="top")
    cfg = NpuConfig(enable_dump_debug=True, dump_debug_mode="atomic_overflow", dump_path=str(tmp_path))
    with EmulatorSession(cfg, g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        sess.run("top:0", {x: [100.0, 1.0]})
        assert sess.last_report.first_overflow == "big"
