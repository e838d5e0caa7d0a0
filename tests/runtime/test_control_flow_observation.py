"""Dump, overflow detection and drift survive TF1 control flow: dead branches and while-loop frames."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.observe.dump import load_dump
from npu_jupyter._runtime.session.emulator import EmulatorSession

# Every test here runs with both rounding forms (Cast pairs and the NpuEmuRound kernel, whose own checks
# replace the flag nodes): the same findings.
pytestmark = pytest.mark.usefixtures("rounding")


def _cond_training_graph(tf):
    """tf.cond in the forward pass (its gradient has Switch/Merge outside a cond context) + warm-up LR."""
    tf.compat.v1.disable_control_flow_v2()
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4, 3], name="x")
        flag = tf.compat.v1.placeholder(tf.bool, [], name="flag")
        w = tf.compat.v1.get_variable("w", initializer=tf.ones([3, 2]), use_resource=False)
        h = tf.matmul(x, w, name="h")
        out = tf.cond(flag, lambda: tf.nn.relu(h), lambda: tf.tanh(h), name="branch")
        loss = tf.reduce_sum(tf.square(out), name="loss")
        step = tf.compat.v1.train.get_or_create_global_step()
        lr = tf.cond(step < 2, lambda: tf.constant(0.01), lambda: tf.constant(0.1), name="warmup")
        ema = tf.train.ExponentialMovingAverage(0.9)
        train = tf.compat.v1.train.GradientDescentOptimizer(lr).minimize(loss, global_step=step)
        with tf.control_dependencies([train]):
            train_op = ema.apply([w])
        shadow = tf.compat.v1.get_variable("shadow_init", initializer=w.initialized_value() * 2.0)
        init = tf.compat.v1.global_variables_initializer()
    tf.compat.v1.enable_control_flow_v2()
    return g, x, flag, loss, train_op, init, shadow


def test_dump_and_overflow_detection_survive_tf_cond_gradients_and_ema(tf, tmp_path):
    g, x, flag, loss, train_op, init, _ = _cond_training_graph(tf)
    feed = {x: np.ones((4, 3), np.float32), flag: True}
    cfg = NpuConfig(enable_dump=True, dump_path=str(tmp_path), enable_dump_debug=True)
    with EmulatorSession(cfg, g) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run([loss, train_op], feed)
        report = sess.last_report
    dump = load_dump(tmp_path)
    assert dump.steps == [0, 1, 2]
    dumped = set(dump[0])
    assert any(op.startswith("gradients/branch") for op in dumped), "the cond gradient's live side is dumped"
    assert report.not_live  # the dead branch was seen and skipped, not fetched


def _while_graph(tf):
    tf.compat.v1.disable_control_flow_v2()
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        _, out = tf.compat.v1.while_loop(
            lambda i, a: i < 3,
            lambda i, a: (i + 1, tf.multiply(a, 300.0, name="grow")),
            [tf.constant(0), x],
            name="loop",
        )
        tf.identity(out, name="out")
    tf.compat.v1.enable_control_flow_v2()
    return g


def test_ops_inside_a_while_loop_are_dumped_per_iteration_and_overflow_checked(tf, hand, tmp_path):
    g = _while_graph(tf)
    cfg = NpuConfig(enable_dump=True, dump_path=str(tmp_path), enable_dump_debug=True)
    with EmulatorSession(cfg, g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        result = sess.run("out:0", {"x:0": np.array([1.0, 2.0], np.float32)})
        report = sess.last_report
    assert np.isinf(result).all()  # 300**3 = 2.7e7 overflows float16
    step = load_dump(tmp_path)[0]
    grow = step["loop/grow"]
    assert [grow[f"output:0#{i}"].tolist() for i in range(3)] == [[300.0, 600.0], [90000.0, 180000.0]] or grow[
        "output:0#0"
    ].tolist() == [300.0, 600.0]
    assert len([k for k in grow if "#" in k]) == 3, "one dumped tensor per iteration"
    assert "loop/grow" in report.overflow_ops


def test_drift_covers_ops_inside_while_loops(tf, hand):
    g = _while_graph(tf)
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul"}), reference=True) as sess:
        sess.run("out:0", {"x:0": np.array([1.001, 2.0], np.float32)})
        drift = sess.last_report.drift
    assert "loop/grow" in drift and drift["loop/grow"]["max_abs"] > 0


def _rnn_loss_scaled_graph(tf):
    """A dynamic_rnn-style loop (TensorArray + while_loop) trained with a static loss scale and IsFinite."""
    tf.compat.v1.disable_control_flow_v2()
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [5, 4, 3], name="x")  # time, batch, features
        w = tf.compat.v1.get_variable("w", [3, 8], initializer=tf.compat.v1.glorot_uniform_initializer(seed=1))
        u = tf.compat.v1.get_variable("u", [8, 8], initializer=tf.compat.v1.glorot_uniform_initializer(seed=2))
        inputs = tf.TensorArray(tf.float32, 5).unstack(x)

        def body(t, h, out):
            h = tf.tanh(tf.matmul(inputs.read(t), w) + tf.matmul(h, u), name="cell")
            return t + 1, h, out.write(t, h)

        _, h, outs = tf.compat.v1.while_loop(
            lambda t, *_: t < 5, body, [tf.constant(0), tf.zeros([4, 8]), tf.TensorArray(tf.float32, 5)], name="rnn"
        )
        loss = tf.reduce_mean(tf.square(outs.stack()), name="loss")
        scale = 1024.0
        grads = tf.gradients(loss * scale, [w, u])
        finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(gr)) for gr in grads], name="finite")
        opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)
        train = tf.cond(
            finite,
            lambda: opt.apply_gradients([(gr / scale, v) for gr, v in zip(grads, [w, u])]),
            tf.no_op,
            name="apply",
        )
        init = tf.compat.v1.global_variables_initializer()
    tf.compat.v1.enable_control_flow_v2()
    return g, x, loss, train, init


def test_a_loss_scaled_rnn_trains_with_dump_and_overflow_detection_under_the_real_planner(tf, tmp_path):
    g, x, loss, train, init = _rnn_loss_scaled_graph(tf)
    feed = {x: np.random.default_rng(0).normal(size=(5, 4, 3)).astype(np.float32)}
    cfg = NpuConfig(
        precision_mode="allow_mix_precision", enable_dump=True, dump_path=str(tmp_path), enable_dump_debug=True
    )
    with EmulatorSession(cfg, g) as sess:
        sess.run(init)
        losses = [sess.run([loss, train], feed)[0] for _ in range(3)]
        report = sess.last_report
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
    assert report.emulation, "the plan lowers MatMuls and the run rounds them"
    step = load_dump(tmp_path)[0]
    assert len([k for k in step["rnn/cell"] if "#" in k]) == 5, "the loop body is dumped once per time step"


def test_dumping_inputs_and_outputs_inside_a_while_loop_builds_a_valid_graph(tf, hand, tmp_path):
    """dump_mode=all once captured a Merge's NextIteration input, gating that NextIteration on itself."""
    g = _while_graph(tf)
    cfg = NpuConfig(enable_dump=True, dump_path=str(tmp_path), dump_mode="all")
    with EmulatorSession(cfg, g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        sess.run("out:0", {"x:0": np.array([1.0, 2.0], np.float32)})  # raised "N nodes in a cycle"
    grow = load_dump(tmp_path)[0]["loop/grow"]
    assert len([k for k in grow if k.startswith("output:0#")]) == 3
    assert any(k.startswith("input:") for k in grow)  # the loop op's own inputs are still dumped


def _parallel_loop(tf):
    """A TF1 while loop with many captured ops per iteration on a chain of its own (like an LSTM's state)."""
    v1 = tf.compat.v1
    v1.disable_control_flow_v2()
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [8], name="x")

        def body(i, state):
            for k in range(16):
                state = tf.sin(state * 1.3 + float(k), name=f"s{k}")
            return i + 1, state

        _, out = v1.while_loop(lambda i, s: i < 20, body, [tf.constant(0), x], parallel_iterations=32)
        tf.identity(out, name="out")
    v1.enable_control_flow_v2()
    return g


def test_loop_values_compare_iteration_by_iteration_so_an_unlowered_loop_shows_no_drift(tf):
    """Zoo check as a user: lstm_sentiment under must_keep_origin_dtype (nothing lowered, fetch drift 0)
    named its while loop's Merge as the worst op (rel. RMSE 0.82): the loop's iterations ran in parallel,
    so the emulated and the float32 runs captured them in different orders."""
    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._runtime.session.emulator import EmulatorSession

    g = _parallel_loop(tf)
    feed = {"x:0": np.linspace(-1, 1, 8).astype(np.float32)}
    with EmulatorSession(NpuConfig(precision_mode="must_keep_origin_dtype"), g, reference=True) as sess:
        for _ in range(3):
            sess.run("out:0", feed)
            drift = sess.last_report.drift
            loop = {op: row for op, row in drift.items() if "while" in op}
            assert "while/s15" in loop, "the loop's values were compared"
            assert all(row["rmse"] == 0 for row in loop.values()), {op: row["rmse"] for op, row in loop.items()}
        # which capture runs first is a race: what rules it out is that the observed copy runs one iteration at a time
        enters = [
            op for op in sess._exec.private.graph.get_operations() if op.type == "Enter" and "npu_emu_run" in op.name
        ]
        assert enters and all(op.get_attr("parallel_iterations") == 1 for op in enters)


def test_a_ref_variable_read_in_a_step_that_assigns_it_is_not_a_drift(tf):
    """subpixel_ID2093 (NPULossScaleOptimizer's tf.cond around Adam): `cond/beta1_power/read` led the
    drift ranking with rel. RMSE 0.1, its emulated read seen after the step's assign (0.9**(k+1)) and its
    float32 one before it (0.9**k). Both sides start the step from the same variables: no drift."""
    v1 = tf.compat.v1
    v1.disable_control_flow_v2()
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [8, 4], name="x")
        w = v1.get_variable("w", initializer=tf.fill([4, 1], 0.1), use_resource=False)
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
        opt = v1.train.AdamOptimizer(0.01)
        grads = opt.compute_gradients(loss)
        finite = tf.reduce_all(tf.stack([tf.reduce_all(tf.math.is_finite(d)) for d, _ in grads]))
        train = tf.cond(finite, lambda: opt.apply_gradients(grads), tf.no_op)  # as the loss-scale optimizer
        init = v1.global_variables_initializer()
    v1.enable_control_flow_v2()
    reads = [op.name for op in g.get_operations() if op.name.endswith("beta1_power/read")]
    assert reads  # the case under test: Adam's beta1_power, a ref variable made inside the cond
    feed = {x: np.random.default_rng(0).random((8, 4), np.float32)}
    with EmulatorSession(NpuConfig(precision_mode="allow_mix_precision"), g, reference=True) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run([train, loss], feed)
        report = sess.last_report
    assert report is not None and report.drift  # the reference ran and compared the step's tensors
    assert not [op for op in reads if op in report.drift]


def test_a_float16_overflow_inside_a_while_loop_is_said_to_arise_in_the_loop_not_at_its_exit(tf, hand):
    """The always-on flags skip loop frames: the first flagged inf/NaN is the loop's Exit, which computes nothing."""
    g = _while_graph(tf)
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        assert np.isinf(sess.run("out:0", {"x:0": np.array([1.0, 2.0], np.float32)})).all()
        finding = sess.last_report.non_finite
    assert finding.first_op is None and finding.where == "inside the while loop loop"
    assert finding.first_tensor == "loop/Exit_1:0" and finding.op_type == "Exit"
    assert "the value went non-finite inside that loop" in finding.reason and "enable_dump_debug" in finding.reason
    assert "computes in float32" not in finding.reason  # what the Exit was blamed for before


def test_enable_dump_debug_names_the_loop_op_that_overflowed_first_not_the_merge_after_it(tf, tmp_path):
    """Topological order puts Merge before the body's Mul, but Merge only hands on (one iteration later) what Mul made."""
    g = _while_graph(tf)
    cfg = NpuConfig(precision_mode="force_fp16", enable_dump_debug=True, dump_path=str(tmp_path))
    with EmulatorSession(cfg, g) as sess:
        sess.run("out:0", {"x:0": np.array([1.0, 2.0], np.float32)})
        report = sess.last_report
    assert {"loop/Merge_1", "loop/grow"} <= set(report.overflow_ops)
    assert report.overflow_ops.index("loop/Merge_1") < report.overflow_ops.index("loop/grow")  # topological
    assert report.first_overflow == "loop/grow"


def test_a_tf2_while_in_a_session_runs_its_body_as_written_and_a_body_overflow_is_said_to_arise_there(tf):
    """TF 2's functional While in a TF1 session: the plan's note says the body is run unrounded; the run shows it."""
    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [2], name="x")
        _, out = v1.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 300.0), [tf.constant(0), x], name="loop")
        tf.identity(out * 1e30, name="big")  # float32 overflows only through the body's 2.7e7
        tf.identity(out, name="out")
    assert "While" in {op.type for op in g.get_operations()} or "StatelessWhile" in {
        op.type for op in g.get_operations()
    }
    with EmulatorSession(NpuConfig(precision_mode="force_fp16"), g) as sess:
        value = sess.run("out:0", {"x:0": np.array([1.0, 2.0], np.float32)})
        report = sess.last_report
    assert np.isinf(value).all()  # stored in float16 after the loop: 2.7e7 > 65504
    first = report.non_finite  # the body's 300**3 came out of the loop finite: the body was not rounded
    assert first.first_op not in (None, "loop") and first.rounded and first.op_type == "Identity"
    assert any(
        "functional control flow" in note and "runs as written (unrounded)" in note for note in report.plan.notes
    )

    with EmulatorSession(NpuConfig(precision_mode="force_fp16"), g) as sess:
        value = sess.run("big:0", {"x:0": np.array([1e35, 2.0], np.float32)})  # 2.7e42 in the body: inf in float32
        finding = sess.last_report.non_finite
    assert np.isinf(value).all()
    assert finding.first_op is None and finding.where == "inside the while loop loop"
    assert "whose body is a function" in finding.reason and "disable_control_flow_v2()" in finding.reason


def test_a_variable_write_of_a_loops_overflowed_result_is_said_to_arise_in_the_loop(tf, hand):
    """The write finding (fetches finite) blames the loop too, not the Exit it read through."""
    v1 = tf.compat.v1
    v1.disable_control_flow_v2()
    g = tf.Graph()
    try:
        with g.as_default():
            w = v1.get_variable("w", [2], initializer=v1.zeros_initializer(), use_resource=False)
            x = v1.placeholder(tf.float32, [2], name="x")
            _, out = v1.while_loop(
                lambda i, a: i < 3, lambda i, a: (i + 1, a * 300.0), [tf.constant(0), x], name="loop"
            )
            update = v1.assign(w, out, name="update")
            loss = tf.reduce_sum(x + 1.0, name="loss")
            init = v1.global_variables_initializer()
    finally:
        v1.enable_control_flow_v2()
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        sess.run(init)
        got, _ = sess.run([loss, update.op], {"x:0": np.array([1.0, 2.0], np.float32)})
        finding = sess.last_report.non_finite
    assert np.isfinite(got)
    assert finding.written == "w" and finding.writer == "update"
    assert finding.first_op is None and finding.where == "inside the while loop loop"
    assert finding.first_tensor == "loop/Exit_1:0" and "went non-finite inside that loop" in finding.reason
