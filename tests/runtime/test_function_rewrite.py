"""Storage rounding inside a traced function: the FunctionDef rewrite's Cast pairs."""

from __future__ import annotations

import numpy as np
import pytest
from rounding_forms import rounding_trips

from npu_jupyter._runtime.functions import emulator as functions

pytestmark = pytest.mark.skipif(not functions.supported(), reason="needs TensorFlow >= 2.14 (AtomicFunction)")


@pytest.mark.usefixtures("rounding")
def test_roundings_that_cannot_change_a_value_get_no_cast_and_the_values_stay_the_same(hand, monkeypatch):
    import tensorflow as tf

    from npu_jupyter._runtime import rewrite
    from npu_jupyter._runtime.functions.rewrite import rewrite_function

    @tf.function
    def step(x):
        m = tf.multiply(x, 3.0, name="m")
        r = tf.nn.relu(m, name="r")
        i = tf.identity(r, name="i")
        return m, r, i, tf.add(i, 1.0, name="out")

    x = tf.constant(np.array([1.0001, -2.5, 30000.0, 1e-6, np.nan], np.float32))  # 90000: inf in float16
    concrete = step.get_concrete_function(x)
    half_types = {"Mul", "Relu", "Identity", "AddV2"}

    def plan_fn(graph, config, soc=None):
        return hand.plan(graph, half_types)

    def run(every_cast: bool):
        """(ops owning a Cast pair, the outputs) with the lean rewrite, or with every rounding's Cast pair."""
        if every_cast:
            monkeypatch.setattr(rewrite, "held_values", lambda graph, roundings: ({}, set()))
        rewritten = rewrite_function(concrete.function_def, concrete.graph, plan_fn(concrete.graph, None))
        marked = [n.name for n in rounding_trips(rewritten.definition.node_def)]
        with functions.FunctionEmulation({"precision_mode": "allow_mix_precision"}, plan_fn=plan_fn):
            outputs = [t.numpy() for t in step(x)]
        monkeypatch.undo()
        return {name.split("/")[0] for name in marked}, outputs, rewritten.roundings

    lean, lean_outputs, roundings = run(every_cast=False)
    every, every_outputs, _ = run(every_cast=True)
    assert {"r", "i"} <= every and not {"r", "i"} & lean  # relu and identity of float16 values: exact
    assert {"m", "out"} <= lean  # these roundings do change values
    assert {(r.op, r.kind) for r in roundings} >= {("r", "output"), ("i", "output")}  # still reported rounded
    assert np.isinf(lean_outputs[0]).any() and np.isnan(lean_outputs[0]).any()
    for a, b in zip(every_outputs, lean_outputs):
        assert a.tobytes() == b.tobytes()
