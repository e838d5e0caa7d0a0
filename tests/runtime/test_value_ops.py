"""The op types both emulator stacks treat as passing on or picking among the values they read."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter._runtime.value_ops import HALF_EXACT, PICKED_VALUES, SAME_VALUES, passes_on_values


def _runs():
    """Op type -> a call of it on float32 tensors ``x`` (shape [2, 3]) and ``y`` (same shape)."""
    import tensorflow as tf

    raw = tf.raw_ops
    return {
        "ConcatV2": lambda x, y: raw.ConcatV2(values=[x, y], axis=0),
        "ExpandDims": lambda x, y: raw.ExpandDims(input=x, axis=0),
        "Identity": lambda x, y: raw.Identity(input=x),
        "MaxPool": lambda x, y: raw.MaxPool(
            input=tf.reshape(x, [1, 2, 3, 1]), ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="SAME"
        ),
        "Maximum": lambda x, y: raw.Maximum(x=x, y=y),
        "Minimum": lambda x, y: raw.Minimum(x=x, y=y),
        "Neg": lambda x, y: raw.Neg(x=x),
        "Pack": lambda x, y: raw.Pack(values=[x, y]),
        "PreventGradient": lambda x, y: raw.PreventGradient(input=x),
        "Relu": lambda x, y: raw.Relu(features=x),
        "Relu6": lambda x, y: raw.Relu6(features=x),
        "Relu6Grad": lambda x, y: raw.Relu6Grad(gradients=x, features=y),
        "ReluGrad": lambda x, y: raw.ReluGrad(gradients=x, features=y),
        "Reshape": lambda x, y: raw.Reshape(tensor=x, shape=[3, 2]),
        "Slice": lambda x, y: raw.Slice(input=x, begin=[0, 1], size=[2, 2]),
        "Snapshot": lambda x, y: raw.Snapshot(input=x),
        "Squeeze": lambda x, y: raw.Squeeze(input=tf.reshape(x, [1, 2, 3])),
        "StopGradient": lambda x, y: raw.StopGradient(input=x),
        "StridedSlice": lambda x, y: raw.StridedSlice(input=x, begin=[0, 0], end=[2, 3], strides=[1, 2]),
        "Tile": lambda x, y: raw.Tile(input=x, multiples=[2, 1]),
        "Transpose": lambda x, y: raw.Transpose(x=x, perm=[1, 0]),
    }


def test_every_listed_type_is_exercised_and_half_exact_leaves_out_max_pool_only():
    assert set(_runs()) == SAME_VALUES | PICKED_VALUES
    assert (SAME_VALUES | PICKED_VALUES) - {"MaxPool"} == HALF_EXACT
    assert passes_on_values("Relu") and passes_on_values("Identity") and not passes_on_values("AddV2")


@pytest.mark.parametrize("op_type", sorted(SAME_VALUES | PICKED_VALUES))
def test_outputs_hold_only_values_read_so_half_values_stay_half_and_finite_ones_finite(op_type):
    import tensorflow as tf

    run = _runs()[op_type]
    half = np.array([[65504.0, -65504.0, 1.0009765625], [np.inf, np.nan, -6e-8]], np.float16).astype(np.float32)
    other = np.array([[-1.0, 2.0, 0.0], [5.0, -np.inf, 3.0]], np.float16).astype(np.float32)
    out = run(tf.constant(half), tf.constant(other)).numpy()
    if op_type in HALF_EXACT:  # rounding the output to float16 again changes nothing, inf and NaN included
        np.testing.assert_array_equal(out.astype(np.float16).astype(np.float32), out)
    big = np.array([[3e38, -3e38, 1.0], [2.0, 3.4e38, -1e-45]], np.float32)  # finite, at float32's edge
    assert np.isfinite(run(tf.constant(big), tf.constant(big[::-1])).numpy()).all()
