"""Finite flags inside traced functions: fewer flags, the same first non-finite op (and by-design set)."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter._runtime.functions import emulator as functions

pytestmark = pytest.mark.skipif(not functions.supported(), reason="needs TensorFlow >= 2.14 (AtomicFunction)")


def _emulated(fn, args, half_types, hand):
    """Run ``fn(*args)`` under a hand-made plan lowering ``half_types``: (output, report, flagged ops)."""

    def plan_fn(graph, config, soc=None):
        return hand.plan(graph, half_types)

    with functions.FunctionEmulation({"precision_mode": "allow_mix_precision"}, plan_fn=plan_fn) as emulation:
        out = fn(*args).numpy()
    (report,) = emulation.reports.values()
    flagged = [w.op for observer in emulation._observers.values() for w in observer.flagged]
    return out, report, flagged


def test_flags_of_ops_passing_on_checked_values_are_left_out_and_the_first_op_stays_the_same(hand):
    import tensorflow as tf

    @tf.function
    def step(x):
        big = tf.multiply(x, 1000.0, name="big")  # 70000: inf in float16
        picked = tf.identity(tf.reshape(tf.nn.relu(big, name="relu"), [2, 1], name="flat"), name="same")
        return tf.reduce_sum(picked, name="loss")

    out, report, flagged = _emulated(step, [tf.constant([70.0, 1.0])], {"Mul", "Relu", "Reshape", "Identity"}, hand)
    assert np.isinf(out)
    assert report.non_finite.first_op == "big" and report.non_finite.rounded
    assert "big" in flagged and not {"relu", "flat", "same"} & set(flagged)


def test_an_op_reading_a_tensor_through_its_own_rounding_keeps_its_flag(hand):
    # y stays float32 (70000 is finite); the lowered Identity reads it through a float16 rounding (inf):
    # the Identity is the first op whose output is non-finite, so its flag cannot be left out.
    import tensorflow as tf

    @tf.function
    def step(x):
        y = tf.multiply(x, 1000.0, name="y")
        return tf.reduce_sum(tf.identity(y, name="i"), name="loss")

    out, report, flagged = _emulated(step, [tf.constant([70.0, 1.0])], {"Identity"}, hand)
    assert np.isinf(out)
    assert "i" in flagged and report.non_finite.first_op == "i" and report.non_finite.rounded


def test_a_view_of_a_minus_inf_mask_keeps_its_flag_so_the_mask_stays_by_design(hand):
    # The -inf mask is non-finite by design (the float32 program computes it too), and so is the masked
    # score that reads it; without the mask's flag (an Identity of a checked tensor) the score would look
    # made non-finite from finite inputs: a false alarm.
    import tensorflow as tf

    @tf.function
    def step(x):
        shaped = tf.reshape(tf.constant([0.0, -np.inf, 0.0, -np.inf]), [2, 2], name="shaped")
        mask = tf.identity(shaped, name="mask")
        scores = tf.add(tf.multiply(x, 2.0, name="scaled"), mask, name="masked")
        return tf.reduce_sum(tf.nn.softmax(scores, name="attention"), name="total")

    out, report, flagged = _emulated(step, [tf.ones((2, 2))], {"Mul", "AddV2", "Reshape", "Softmax"}, hand)
    assert np.isfinite(out)
    assert report.non_finite is None and report.non_finite_by_design == ["mask", "masked", "shaped"]
    assert "mask" in flagged


def test_a_variable_holding_inf_is_named_by_its_read_whose_flag_stays(hand):
    import tensorflow as tf

    v = tf.Variable([np.inf, 1.0])

    @tf.function
    def step():
        return tf.reduce_sum(tf.identity(tf.nn.relu(v.read_value()), name="seen"), name="loss")

    out, report, flagged = _emulated(step, [], {"Relu", "Identity"}, hand)
    assert np.isinf(out)
    first = report.non_finite.first_op
    assert report.non_finite.op_type == "ReadVariableOp" and first in flagged and "seen" not in flagged


def test_enable_dump_debug_keeps_every_flag_so_every_overflowing_op_is_listed(hand, tmp_path):
    import tensorflow as tf

    @tf.function
    def step(x):
        big = tf.multiply(x, 1000.0, name="big")
        return tf.reduce_sum(tf.identity(tf.nn.relu(big, name="relu"), name="same"), name="loss")

    def plan_fn(graph, config, soc=None):
        return hand.plan(graph, {"Mul", "Relu", "Identity"})

    config = {"precision_mode": "allow_mix_precision", "enable_dump_debug": True, "dump_path": str(tmp_path)}
    with functions.FunctionEmulation(config, plan_fn=plan_fn) as emulation:
        step(tf.constant([70.0, 1.0]))
    (report,) = emulation.reports.values()
    assert {"big", "relu", "same"} <= set(report.overflow_ops)


@pytest.mark.parametrize(("scale", "first"), [(70.0, "scalar_big"), (1.0, "vector_big")])
def test_scalar_flags_share_one_node_and_the_first_non_finite_op_stays_exact(hand, scale, first):
    import tensorflow as tf

    @tf.function
    def step(x, s):
        vector = tf.multiply(x, 2.0, name="vector")
        scalar = tf.multiply(s, 1000.0, name="scalar_big")  # 70 -> 70000: inf in float16
        late = tf.multiply(vector, 1000.0, name="vector_big")  # 2 * 40 * 1000: inf in float16
        return tf.reduce_sum(late) + tf.sqrt(scalar, name="root")

    def plan_fn(graph, config, soc=None):
        return hand.plan(graph, {"Mul", "Sqrt"})

    with functions.FunctionEmulation({"precision_mode": "allow_mix_precision"}, plan_fn=plan_fn) as emulation:
        step(tf.constant([40.0, 1.0]), tf.constant(scale))
    (report,) = emulation.reports.values()
    assert report.non_finite.first_op == first
    (observer,) = emulation._observers.values()
    (rewritten, _) = emulation._handled[observer.name]
    health = [n for n in rewritten.definition.node_def if n.op == "DebugNumericSummaryV2"]
    graph = emulation._graphs[observer.name]
    scalars = [w.op for w in observer.flagged if graph.get_operation_by_name(w.op).outputs[w.slot].shape.rank == 0]
    assert {"scalar_big", "root"} <= set(scalars) and len(health) == len(observer.flagged) - len(scalars)
