"""The adapter docs' sess.run examples, with npu_bridge imports replaced by npu_jupyter, on the emulator.

Each example builds its ConfigProto by hand exactly as the docs do; ``tf.Session(config=config)`` becomes
``npu_jupyter.session(config)`` (what ``%%npu`` does to every session a cell creates).
"""

from __future__ import annotations

import numpy as np
import pytest

import npu_jupyter


def _npu_proto(tf, **params):
    from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

    config = tf.compat.v1.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["use_off_line"].b = True
    for key, value in params.items():
        if isinstance(value, bool):
            custom_op.parameter_map[key].b = value
        elif isinstance(value, int):
            custom_op.parameter_map[key].i = value
        else:
            custom_op.parameter_map[key].s = tf.compat.as_bytes(value)
    config.graph_options.rewrite_options.remapping = RewriterConfig.OFF  # Disable remapping.
    config.graph_options.rewrite_options.memory_optimization = RewriterConfig.OFF
    return config


def test_mixed_computing_example_runs_and_keeps_the_scoped_ops_on_the_host(tf):
    from npu_jupyter import scope as npu_scope

    g = tf.Graph()
    with g.as_default():
        X = tf.compat.v1.random_normal([2])
        Y = tf.compat.v1.random_normal([2])
        with npu_scope.without_npu_compile_scope():
            pred = tf.add(tf.multiply(X, 1.0), 0.0)
        cost = tf.reduce_sum(tf.abs(pred - Y))
        config = _npu_proto(tf, mix_compile_mode=True)
        with npu_jupyter.session(config) as sess:
            value = sess.run(cost)
            plan = sess.last_report.plan
    assert np.isfinite(value)
    assert plan.ops[pred.op.name].placement == "host"
    assert sess.last_report.backend == "emulator"


def _model(tf):
    g = tf.Graph()
    with g.as_default():
        rng = np.random.default_rng(0)
        x = tf.constant(rng.standard_normal((16, 8)).astype(np.float32) * 3.0)
        w = tf.compat.v1.get_variable("w", initializer=tf.constant(rng.standard_normal((8, 4)).astype(np.float32)))
        logits = tf.matmul(x, w, name="logits")
        cost = tf.reduce_mean(
            tf.nn.softmax_cross_entropy_with_logits(labels=tf.one_hot(tf.range(16) % 4, 4), logits=logits), name="cost"
        )
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(cost)
        init = tf.compat.v1.global_variables_initializer()
    return g, logits, cost, train, init


def test_mixed_precision_example_runs_finite_and_changes_the_numbers(tf):
    values = {}
    for mode in ("allow_mix_precision", "must_keep_origin_dtype"):
        g, logits, cost, train, init = _model(tf)
        with g.as_default(), npu_jupyter.session(_npu_proto(tf, precision_mode=mode)) as sess:
            sess.run(init)
            values[mode] = sess.run(logits)
            losses = [sess.run([cost, train])[0] for _ in range(5)]
            assert np.isfinite(losses).all() and losses[-1] < losses[0]
            if mode == "allow_mix_precision":
                assert sess.last_report.plan.ops[logits.op.name].dtype_after == "float16"
    assert not np.array_equal(values["allow_mix_precision"], values["must_keep_origin_dtype"])
    np.testing.assert_allclose(values["allow_mix_precision"], values["must_keep_origin_dtype"], rtol=2e-2, atol=2e-2)


def test_float16_turns_one_plus_1e4_into_one_under_the_training_default(tf):
    g = tf.Graph()
    with g.as_default():
        a = tf.compat.v1.placeholder(tf.float32, [1, 2])
        b = tf.constant([[1.0], [1e-4]])
        out = tf.matmul(a, b)
    with npu_jupyter.session(_npu_proto(tf), g) as sess:  # Ascend910 training default: allow_fp32_to_fp16
        assert sess.run(out, {a: [[1.0, 1.0]]})[0, 0] == 1.0
    with npu_jupyter.session(_npu_proto(tf, precision_mode="must_keep_origin_dtype"), g) as sess:
        assert sess.run(out, {a: [[1.0, 1.0]]})[0, 0] == pytest.approx(1.0001, abs=1e-6)


def test_session_options_calling_example_and_per_session_device_ids(tf):
    g, logits, cost, train, init = _model(tf)
    with g.as_default():
        for device_id in (0, 1, 7):
            with npu_jupyter.session(_npu_proto(tf, session_device_id=device_id)) as sess:
                sess.run(init)
                assert np.isfinite(sess.run(cost))
                proto = sess._exec.session._config
                opt = proto.graph_options.rewrite_options.custom_optimizers[0]
                assert opt.parameter_map["session_device_id"].i == device_id
