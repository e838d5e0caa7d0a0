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


def test_ops_ge_executes_itself_are_never_flagged_as_overflowing(tf, hand, tmp_path):
    """CANN compiles the overflow check into each operator and reads the AI Core status register after its
    task: ExpandDims and Squeeze, which GE executes itself (no kernel), pass the inf of the Mul before them
    on, but only the Mul that made it and the kernel after them are flagged. Found on ModelZoo VAE_ID2593
    (force_fp16 + over_dump): the variable reads of NaN weights led the report's overflow flags."""
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        big = tf.multiply(x, 1000.0, name="big")  # 1e5 overflows float16
        shaped = tf.squeeze(tf.expand_dims(big, 0, name="lift"), [0], name="drop")
        tf.reduce_max(shaped, name="top")
    cfg = NpuConfig(enable_dump_debug=True, dump_debug_mode="all", dump_path=str(tmp_path))
    with EmulatorSession(cfg, g, plan_fn=hand.plan_fn({"Mul", "ExpandDims", "Squeeze", "Max"})) as sess:
        sess.run("top:0", {x: [100.0, 1.0]})
        report = sess.last_report
    plan = report.plan
    assert {plan.ops[op].op_type for op in ("lift", "drop")} == {"ExpandDims", "Squeeze"}
    assert report.overflow_ops == ["big", "top"] and report.first_overflow == "big"
    assert report.overflow_check is not None and report.overflow_check.checked == 1
