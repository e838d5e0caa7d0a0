"""The emulator plans and rounds per run graph (what one Session.run reaches), as the adapter does."""

from __future__ import annotations

import numpy as np

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.session.emulator import EmulatorSession


def _dataset_training_graph(tf):
    """A TF1 script's graph: an initializable tf.data iterator (MakeIterator in the graph) feeding a step."""
    g = tf.Graph()
    with g.as_default():
        data = np.random.default_rng(0).normal(size=(64, 8)).astype(np.float32)
        labels = (data.sum(axis=1, keepdims=True) > 0).astype(np.float32)
        ds = tf.compat.v1.data.Dataset.from_tensor_slices((data, labels)).repeat().batch(16)
        iterator = tf.compat.v1.data.make_initializable_iterator(ds)
        x, y = iterator.get_next()
        w1 = tf.compat.v1.get_variable("w1", [8, 16], initializer=tf.compat.v1.glorot_uniform_initializer(seed=1))
        w2 = tf.compat.v1.get_variable("w2", [16, 1], initializer=tf.compat.v1.glorot_uniform_initializer(seed=2))
        h = tf.nn.relu(tf.matmul(x, w1), name="hidden")
        logits = tf.matmul(h, w2, name="logits")
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits), name="loss")
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        init = tf.compat.v1.global_variables_initializer()
    return g, iterator.initializer, init, loss, train


def test_a_training_step_beside_a_make_iterator_is_rounded_as_its_own_run_graph_plans(tf):
    g, it_init, init, loss, train = _dataset_training_graph(tf)
    with EmulatorSession(NpuConfig(precision_mode="allow_fp32_to_fp16"), g) as sess:
        sess.run(init)
        sess.run(it_init)
        init_report = sess.last_report
        emulated = [sess.run([loss, train])[0] for _ in range(3)]
        report = sess.last_report
    assert report.plan.warnings == [] or not any("dataset initialisation" in w for w in report.plan.warnings)
    lowered = [n for n, d in report.plan.ops.items() if d.dtype_after == "float16"]
    assert lowered, "the training run graph's plan lowers ops"
    assert report.emulation, "and the emulated step rounds their tensors"
    assert any(
        "Nothing to offload: dataset initialisation" in n for n in init_report.plan.notes
    )  # that run graph exits
    assert not init_report.plan.warnings  # as every initializable iterator's does: a note, not a warning
    with tf.compat.v1.Session(graph=g) as plain:
        plain.run(init)
        plain.run(it_init)
        exact = [plain.run([loss, train])[0] for _ in range(3)]
    assert not np.array_equal(emulated, exact), "float16 rounding changes the losses"
    np.testing.assert_allclose(emulated, exact, rtol=2e-2)


def test_a_run_whose_plan_lowers_but_rounds_nothing_says_why_in_the_report(tf, hand):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.int32, [2], name="x")
        tf.add(x, 1, name="y")
    from npu_jupyter._plan.model import Plan

    def plan_fn(graph, config, fetches=None):
        plan = hand.plan(graph)
        ops = dict(plan.ops)
        d = ops["y"]
        ops["y"] = type(d)(
            **{**d.__dict__, "dtype_before": "float32", "dtype_after": "float16", "output_dtypes": ["float16"]}
        )
        return Plan(ops=ops)

    with EmulatorSession(NpuConfig(), g, plan_fn=plan_fn) as sess:
        sess.run("y:0", {"x:0": [1, 2]})
        report = sess.last_report
    assert report.emulation == {}
    assert any("rounds no tensor" in w and "y" in w for w in report.warnings)


def test_ops_pinned_to_a_gpu_run_as_with_the_adapters_soft_placement(tf, hand):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        with tf.device("/gpu:0"):
            y = tf.multiply(x, 2.0, name="y")
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn()) as sess:
        np.testing.assert_array_equal(sess.run(y, {x: [1.0, 2.0]}), [2.0, 4.0])
        assert sess._proto().allow_soft_placement
        assert any("allow_soft_placement=True" in w and "y" in w for w in sess.last_report.warnings)


def test_drift_against_float32_reads_the_same_batch_as_the_emulated_step_from_an_iterator(tf):
    g, it_init, init, loss, train = _dataset_training_graph(tf)
    with EmulatorSession(NpuConfig(precision_mode="allow_fp32_to_fp16"), g, reference=True) as sess:
        sess.run(init)
        sess.run(it_init)
        for _ in range(2):
            sess.run([loss, train])
        drift = sess.last_report.drift
    assert "loss" in drift and drift["loss"]["max_rel"] < 0.05  # same batch, same weights: small drift only
    assert any(op.startswith("IteratorGetNext") for op in drift) and all(
        drift[op]["max_abs"] == 0 for op in drift if op.startswith("IteratorGetNext")
    )


def test_adding_ops_between_runs_keeps_the_iterator_position_and_the_session(tf):
    g, it_init, init, loss, train = _dataset_training_graph(tf)
    with EmulatorSession(NpuConfig(precision_mode="allow_fp32_to_fp16"), g) as sess:
        sess.run(init)
        sess.run(it_init)
        sess.run([loss, train])
        inner = sess._exec.session
        with g.as_default():
            doubled = tf.multiply(loss, 2.0, name="doubled")  # a new cell adds an op: the graph version changes
        value = sess.run(doubled)  # the iterator is still initialized, so this runs
        assert sess._exec.session is inner
    assert np.isfinite(value)


def test_an_op_added_with_control_inputs_on_existing_ops_keeps_the_iterator_and_the_session(tf):
    # LeNet_ID0127 initialises its iterator, then creates global_variables_initializer(): a NoOp whose
    # inputs are all control inputs on ops the copy already holds
    g, it_init, _, loss, train = _dataset_training_graph(tf)
    with EmulatorSession(NpuConfig(precision_mode="allow_fp32_to_fp16"), g) as sess:
        sess.run(it_init)
        inner = sess._exec.session
        with g.as_default():
            init = tf.compat.v1.global_variables_initializer()
        sess.run(init)
        value = sess.run([loss, train])[0]  # the iterator is still initialized
        assert sess._exec.session is inner
    assert np.isfinite(value)


def test_the_planner_takes_whole_graph_exits_per_run_graph(tf):
    from npu_jupyter._plan.planner import plan

    g, it_init, init, loss, train = _dataset_training_graph(tf)
    cfg = NpuConfig(precision_mode="allow_fp32_to_fp16")

    def exits(p):
        return any("dataset initialisation" in w for w in p.warnings + p.notes)

    whole = plan(g, cfg)  # the whole tf.Graph holds MakeIterator beside the IteratorV2, and the model's compute
    assert any("Nothing is offloaded: dataset initialisation" in w for w in whole.warnings)
    assert exits(plan(g, cfg, fetches=[it_init]))  # so does the run graph of the iterator's initializer
    step = plan(g, cfg, fetches=[loss, train])  # the training step's run graph does not
    assert not exits(step) and any(d.dtype_after == "float16" for d in step.ops.values())
