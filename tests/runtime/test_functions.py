"""TF2 code on the emulator: Keras fit and GradientTape loops run in the plan's precisions, then restored."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter.runtime import functions

pytestmark = pytest.mark.skipif(not functions.supported(), reason="needs TensorFlow >= 2.14 (AtomicFunction)")


def _keras_cnn_losses(config, epochs=3):
    """Loss per epoch of a small Keras 3 CNN trained with a fixed seed (under the emulation if config)."""
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.layers.Input((8, 8, 3)),
            keras.layers.Conv2D(8, 3, activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(10),
        ]
    )
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(64, 8, 8, 3)).astype("float32"), rng.integers(0, 10, 64)
    if config is None:
        return model.fit(x, y, epochs=epochs, batch_size=16, verbose=0).history["loss"], None, None
    with functions.FunctionEmulation(config) as emulation:
        losses = model.fit(x, y, epochs=epochs, batch_size=16, verbose=0).history["loss"]
    after = model.fit(x, y, epochs=1, batch_size=16, verbose=0).history["loss"]
    return losses, emulation, after


def test_keras_fit_under_mixed_precision_trains_with_float16_rounding():
    plain, _, _ = _keras_cnn_losses(None)
    losses, emulation, _ = _keras_cnn_losses({"precision_mode": "allow_mix_precision"})
    assert losses != plain  # the rounding changed the trajectory
    assert np.allclose(losses, plain, rtol=1e-2)  # ... by float16-sized amounts
    (report,) = emulation.reports.values()
    assert report.steps == 12  # 3 epochs x 4 batches
    assert report.plan is not None and any(d.dtype_after == "float16" for d in report.plan.ops.values())
    assert any("Conv2D" in op or "convolution" in op for op in report.emulation)
    assert report.extra["notes"] == [functions.TF2_RULE_NOTE]


def test_must_keep_origin_dtype_matches_a_plain_run_bit_for_bit():
    plain, _, _ = _keras_cnn_losses(None)
    losses, emulation, _ = _keras_cnn_losses({"precision_mode": "must_keep_origin_dtype"})
    assert losses == plain
    (report,) = emulation.reports.values()
    assert report.emulation == {}


def test_leaving_the_emulation_restores_the_original_functions():
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(3)])
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(32, 4)).astype("float32"), rng.normal(size=(32, 3)).astype("float32")
    weights = model.get_weights()
    with functions.FunctionEmulation({"precision_mode": "force_fp16"}):
        model.fit(x, y, epochs=1, batch_size=32, verbose=0)
    model.set_weights(weights)
    after = model.fit(x, y, epochs=1, batch_size=32, verbose=0).history["loss"]
    model.set_weights(weights)
    plain = model.fit(x, y, epochs=1, batch_size=32, verbose=0).history["loss"]
    assert after == plain


def _tape_losses(config, steps=4):
    """A custom GradientTape training loop in a tf.function (a two-layer MLP)."""
    import tensorflow as tf

    rng = np.random.default_rng(2)
    x = tf.constant(rng.normal(size=(32, 16)).astype("float32"))
    y = tf.constant(rng.normal(size=(32, 1)).astype("float32"))
    w1 = tf.Variable(rng.normal(size=(16, 32)).astype("float32") * 0.3)
    w2 = tf.Variable(rng.normal(size=(32, 1)).astype("float32") * 0.3)

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            hidden = tf.nn.relu(tf.matmul(x, w1))
            loss = tf.reduce_mean(tf.square(tf.matmul(hidden, w2) - y))
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1.assign_sub(0.05 * g1)
        w2.assign_sub(0.05 * g2)
        return loss

    if config is None:
        return [float(train_step()) for _ in range(steps)], None
    with functions.FunctionEmulation(config) as emulation:
        losses = [float(train_step()) for _ in range(steps)]
    return losses, emulation


def test_a_gradient_tape_loop_trains_in_the_decided_precision():
    plain, _ = _tape_losses(None)
    losses, emulation = _tape_losses({"precision_mode": "allow_mix_precision"})
    assert losses != plain and np.allclose(losses, plain, rtol=1e-2)
    (report,) = emulation.reports.values()
    assert report.steps == 4 and any("MatMul" in op for op in report.emulation)
    same, _ = _tape_losses({"precision_mode": "must_keep_origin_dtype"})
    assert same == plain


def test_a_non_finite_function_output_is_reported():
    import tensorflow as tf

    big = tf.constant([60000.0, 70000.0])

    @tf.function
    def scale():
        return tf.matmul(tf.reshape(big, (1, 2)), tf.constant([[2.0], [2.0]]))

    plain = scale().numpy()
    assert np.isfinite(plain).all()  # float32 holds 260000
    with functions.FunctionEmulation({"precision_mode": "force_fp16"}) as emulation:
        out = scale().numpy()
    assert not np.isfinite(out).all()  # float16 tops out at 65504
    (report,) = emulation.reports.values()
    assert report.extra["nonfinite"]["step"] == 0 and any("non-finite" in w for w in report.warnings)


def test_function_reports_place_ops_by_the_npu_device_rule():
    import tensorflow as tf

    w = tf.Variable(tf.ones([4]))

    @tf.function
    def step(x):
        w.assign_sub(0.1 * x)
        return tf.math.lgamma(w + 2.0) * x

    x = tf.ones([4])
    with functions.FunctionEmulation({"precision_mode": "allow_mix_precision"}) as emulation:
        step(x)
    (report,) = emulation.reports.values()
    ops = report.plan.ops.values()
    assert all(d.placement_reason.startswith("npu_device: ") for d in ops)
    # npu_device's rule, not the TF1 mixed-computing one: the unsupported op alone goes to the CPU,
    # the variable (an NPU resource substitute) and the ops reading it stay on the NPU
    assert [d.op_type for d in ops if d.placement == "host" and d.op_type != "Placeholder"] == ["Lgamma"]
    assert all(d.placement == "device" for d in ops if d.op_type in ("ReadVariableOp", "AssignSubVariableOp"))
    assert "TF2 adapter (npu_device)" in report.plan.title
    assert report.extra["notes"] == [functions.TF2_RULE_NOTE]
    assert "npu_device NodePlacer" in functions.TF2_RULE_NOTE
