"""plan() tells a user what to pass when given something it cannot plan yet."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from npu_jupyter._plan.planner import plan


def test_a_tf_function_gets_told_to_call_get_concrete_function():
    @tf.function
    def step(x):
        return tf.nn.relu(x)

    with pytest.raises(TypeError, match=r"step\.get_concrete_function\(") as err:
        plan(step)
    assert "tf.TensorSpec" in str(err.value)
    traced = plan(step.get_concrete_function(tf.TensorSpec([2, 3], tf.float32)))
    assert any(d.op_type == "Relu" for d in traced.ops.values())
