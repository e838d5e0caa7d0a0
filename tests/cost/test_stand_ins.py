"""The emulator's stand-ins for npu_ops.dropout are not estimated as the device's costliest ops."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter._display import text
from npu_jupyter._display.mime import report_payload

CONFIG = {"precision_mode": "allow_mix_precision"}


def _report(dropout):
    """The report of one step of x @ w -> dropout(keep 0.5) -> mean, on the emulator."""
    import tensorflow as tf

    import npu_jupyter

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [64, 256], name="x")
        w = tf.compat.v1.get_variable("w", [256, 256])
        loss = tf.reduce_mean(dropout(tf.matmul(x, w)), name="loss")
        init = tf.compat.v1.global_variables_initializer()
    with npu_jupyter.session(config=CONFIG, graph=g) as sess:
        sess.run(init)
        sess.run(loss, {x: np.ones((64, 256), np.float32)})
        return sess.last_report


@pytest.fixture(scope="module")
def emulated():
    from npu_jupyter.adapter.tf1 import npu_ops

    return _report(lambda h: npu_ops.dropout(h, keep_prob=0.5))


def test_the_emulated_dropouts_ops_are_left_out_of_the_costliest_ops_and_said_to_be_stand_ins(emulated):
    """The stand-in RandomUniform (AI CPU, 30 µs) led 'Estimated costliest ops' as if the device ran it."""
    estimated = emulated.estimate.est_us
    assert "MatMul" in estimated and not [name for name in estimated if name.startswith("dropout/")]
    shown = text.render(report_payload(emulated))
    costliest = next(line for line in shown.splitlines() if line.startswith("Estimated costliest ops"))
    assert "dropout/" not in costliest
    (note,) = [n for n in emulated.notes if "stand-ins" in n]
    assert note.startswith("8 ops are the emulator's stand-ins for npu_ops.dropout (dropout/")
    assert "dropout/random_uniform/RandomUniform, " in note and "Const" not in note  # the costly ones named
    assert "the device runs npu_ops.dropout's DropOutGenMask/DropOutDoMask there" in note
    assert emulated.estimate.block.step_ms is not None  # the step estimate stays, counting them (the note says)


def test_a_users_own_tf_nn_dropout_is_estimated_and_not_called_a_stand_in():
    """tf.nn.dropout in the user's graph is what the device runs too: no note, estimated as usual."""
    import tensorflow as tf

    report = _report(lambda h: tf.nn.dropout(h, rate=0.5))
    assert any(name.endswith("RandomUniform") for name in report.estimate.est_us)
    assert not [n for n in report.notes if "stand-ins" in n]


def _loss_scaled(soc, check=None):
    """(report, graph) of one step of a 4-layer MLP trained through NPULossScaleOptimizer on ``soc``."""
    import tensorflow as tf

    import npu_jupyter
    from npu_jupyter.adapter.tf1.loss_scale import ExponentialUpdateLossScaleManager, NPULossScaleOptimizer

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [64, 512], name="x")
        h = x
        for i in range(4):
            h = tf.nn.relu(tf.matmul(h, tf.compat.v1.get_variable(f"w{i}", [512, 512])))
        loss = tf.reduce_mean(h, name="loss")
        if check is not None:
            loss = loss + tf.cast(tf.reduce_all(tf.math.is_finite(h, name="user_check")), tf.float32)
        manager = ExponentialUpdateLossScaleManager(init_loss_scale=2**16, incr_every_n_steps=1000)
        train = NPULossScaleOptimizer(tf.compat.v1.train.MomentumOptimizer(0.1, 0.9), manager).minimize(loss)
        init = tf.compat.v1.global_variables_initializer()
    with npu_jupyter.session(config={**CONFIG, "soc_config": soc}, graph=g) as sess:
        sess.run(init)
        sess.run([loss, train], {x: np.ones((64, 512), np.float32)})
        return sess.last_report, g


@pytest.fixture(scope="module")
def loss_scaled_910():
    return _loss_scaled("Ascend910")


def test_on_an_ascend910_the_loss_scale_check_is_a_stand_in_for_the_float_status_register(loss_scaled_910):
    """The adapter reads the float-status register there (saturation mode); the IsFinite checks led the
    costliest ops (AI CPU, 30 µs each) and were a third of this model's estimated step."""
    report, _ = loss_scaled_910
    checks = [d.name for d in report.plan.ops.values() if d.op_type == "IsFinite"]
    assert len(checks) == 4  # one per gradient
    assert not [name for name in report.estimate.est_us if name in checks or "overflow_status" in name]
    (note,) = [n for n in report.notes if "stand-ins" in n]
    # 4 IsFinite + 4 All, their Pack and final All, and the Consts of the reductions' axes
    assert note.startswith("15 ops are the emulator's stand-ins for NPULossScaleOptimizer's overflow check (IsFinite, ")
    assert "a read of its float-status register (NpuGetFloatStatusV2, NpuClearFloatStatusV2" in note
    assert note.endswith("the estimated NPU step counts the device's 4 ops per check in their place")
    shown = text.render(report_payload(report))
    costliest = next(line for line in shown.splitlines() if line.startswith("Estimated costliest ops"))
    assert "IsFinite" not in costliest and "MatMul" in " ".join(report.estimate.est_us)


def test_the_step_estimate_counts_four_float_status_ops_in_place_of_the_checks(loss_scaled_910):
    """Step = the estimate with the checks, less what they were estimated at, plus one AI Core launch per
    op the device runs in their place."""
    from npu_jupyter.cost.roofline import estimate, soc_figures
    from npu_jupyter.cost.stand_ins import OVERFLOW_CHECK, stand_ins

    report, graph = loss_scaled_910
    found = stand_ins(report.plan, graph)
    assert set(found.values()) == {OVERFLOW_CHECK} and len(found) == 15
    with_checks = estimate(report.plan, graph, fed_shapes=report.fed_shapes, fetched=report.fetches)
    checks_us = sum(with_checks.ops[name].est_us for name in found if name in with_checks.ops)
    assert checks_us > 4 * soc_figures("Ascend910").aicpu_launch_us  # four AI CPU IsFinite ops, and more
    expected_us = with_checks.step_ms * 1e3 - checks_us + 4 * soc_figures("Ascend910").aicore_launch_us
    assert report.estimate.block.step_ms * 1e3 == pytest.approx(expected_us, rel=1e-9)


def test_the_ops_counted_in_the_checks_place_are_ai_core_ops_in_both_op_tables():
    """The step estimate adds one AI Core launch per op the device runs instead: the op tables agree."""
    from npu_jupyter._plan.planner import library_for
    from npu_jupyter.cost.stand_ins import KINDS, OVERFLOW_CHECK

    for soc in ("Ascend910", "Ascend910B"):
        for op in KINDS[OVERFLOW_CHECK].device_ops:
            assert library_for(soc).caps(op).engine == "AI_CORE", (soc, op)


def test_on_an_ascend910b_the_checks_are_the_adapters_own_and_estimated():
    """INF/NaN mode, the 910B's default: the adapter runs IsFinite per gradient itself (contrib's optimizer)."""
    report, _ = _loss_scaled("Ascend910B")
    assert len([name for name in report.estimate.est_us if name.startswith("IsFinite")]) == 4
    assert not [n for n in report.notes if "stand-ins" in n]


def test_a_users_own_is_finite_on_an_ascend910_is_estimated_and_not_called_a_stand_in():
    """Only the optimizer's check is stamped: an IsFinite the user wrote is work the device does."""
    report, _ = _loss_scaled("Ascend910", check=True)
    assert "user_check" in report.estimate.est_us
    (note,) = [n for n in report.notes if "stand-ins" in n]
    assert "user_check" not in note and note.startswith("15 ops")


def test_stamped_marks_only_the_ops_built_in_its_block_and_knows_its_kinds():
    import tensorflow as tf

    from npu_jupyter.cost.stand_ins import DROPOUT, STAND_IN_ATTR, stamped

    g = tf.Graph()
    with g.as_default():
        before = tf.constant(1.0, name="before")
        with stamped(DROPOUT):
            inside = tf.identity(before, name="inside")
        after = tf.identity(inside, name="after")
    assert inside.op.get_attr(STAND_IN_ATTR) == DROPOUT.encode()
    for op in (before.op, after.op):
        with pytest.raises(ValueError):
            op.get_attr(STAND_IN_ATTR)
    with pytest.raises(ValueError, match="unknown stand-in kind 'npu_ops.drop'"):
        stamped("npu_ops.drop")
