"""The note on a Keras optimizer's update computed in half precision (npu_jupyter/_runtime/functions/update_note.py)."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter._plan.model import OpDecision, Plan
from npu_jupyter._runtime.functions import emulator as functions
from npu_jupyter._runtime.functions.update_note import half_precision_optimizer_ops, update_note


def _op(name, op_type, before="float32", after="float32"):
    return OpDecision(
        name=name,
        op_type=op_type,
        placement="device",
        engine="AI_CORE",
        placement_reason="",
        dtype_before=before,
        dtype_after=after,
        precision_reason="",
    )


def _plan(*ops):
    return Plan(ops={d.name: d for d in ops})


def test_half_precision_arithmetic_in_an_optimizers_update_scope_gets_the_note():
    plan = _plan(
        _op("grad", "MatMul", after="float16"),
        _op("Adam/sub", "Sub", after="float16"),
        _op("Adam/Identity", "Identity", after="float16"),  # a copy of the gradient: not arithmetic
        _op("Adam/mul", "Mul"),  # kept in float32
        _op("Adam/AssignSubVariableOp", "AssignSubVariableOp", before="", after=""),
    )
    assert half_precision_optimizer_ops(plan) == ["Adam/sub"]
    note = update_note(plan)
    assert note is not None and "computes 1 op of it in half precision (e.g. Adam/sub)" in note
    assert "ResourceApplyAdam" in note and "may not occur there" in note


def test_a_callees_numbered_optimizer_scope_counts():
    plan = _plan(
        _op("one_step/sgd_1/Mul", "Mul", after="bfloat16"),
        _op("one_step/sgd_1/AssignSubVariableOp", "AssignSubVariableOp", before="", after=""),
    )
    assert half_precision_optimizer_ops(plan) == ["one_step/sgd_1/Mul"]


@pytest.mark.parametrize(
    "ops",
    [
        # only a copy of the float16 gradient in the optimizer's scope
        (_op("adam/Identity", "Identity", after="float16"), _op("adam/AssignAddVariableOp", "AssignAddVariableOp")),
        # a user's own update outside an optimizer's scope: TensorFlow 2.6.5 builds it the same way
        (_op("my_update/mul", "Mul", after="float16"), _op("my_update/AssignSubVariableOp", "AssignSubVariableOp")),
        (_op("mul", "Mul", after="float16"), _op("AssignSubVariableOp", "AssignSubVariableOp")),
        # an optimizer's arithmetic kept in float32
        (_op("adam/mul", "Mul"), _op("adam/AssignSubVariableOp", "AssignSubVariableOp")),
    ],
)
def test_no_note_where_the_device_would_run_the_same_update(ops):
    assert update_note(_plan(*ops)) is None
    assert update_note(None) is None


needs_functions = pytest.mark.skipif(not functions.supported(), reason="needs TensorFlow >= 2.14 (AtomicFunction)")


def _report(config, scope):
    import tensorflow as tf

    v = tf.Variable(np.ones((4, 4), "float32"))
    x = tf.constant(np.full((4, 4), 0.5, "float32"))

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.matmul(x, v))
        g = tape.gradient(loss, v)
        with tf.name_scope(scope):
            v.assign_sub(0.1 * (g * g))
        return loss

    with functions.FunctionEmulation(config) as emulation:
        step()
    (report,) = emulation.reports.values()
    return report


@needs_functions
def test_a_traced_step_with_an_optimizer_scope_in_half_precision_says_so_and_a_kept_one_does_not():
    mixed = _report({"precision_mode": "allow_mix_precision"}, "adam")
    assert any(note.startswith("The optimizer's update here is element-wise arithmetic") for note in mixed.notes)
    kept = _report({"precision_mode": "must_keep_origin_dtype"}, "adam")
    assert not any("optimizer's update" in note for note in kept.notes)
    own = _report({"precision_mode": "allow_mix_precision"}, "my_update")
    assert not any("optimizer's update" in note for note in own.notes)


@needs_functions
def test_keras_fit_whose_adam_keeps_its_arithmetic_in_float32_gets_no_note():
    """Keras 3's Adam on a small CNN: only Identity copies of the float16 gradients are lowered in its scope."""
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.layers.Input((8, 8, 3)), keras.layers.Conv2D(8, 3), keras.layers.Flatten(), keras.layers.Dense(10)]
    )
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(32, 8, 8, 3)).astype("float32"), rng.integers(0, 10, 32)
    with functions.FunctionEmulation({"precision_mode": "allow_mix_precision"}) as emulation:
        model.fit(x, y, epochs=1, batch_size=16, verbose=0)
    reports = [r for r in emulation.reports.values() if r.plan is not None and r.steps]
    assert reports and not any("optimizer's update" in note for r in reports for note in r.notes)
