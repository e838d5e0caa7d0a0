"""A non-finite fetch of a lowered run is explained without asking; the device's float32 slots stay float32."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.session.emulator import EmulatorSession

# Every test here runs with both rounding forms (Cast pairs and the NpuEmuRound kernel, whose own checks
# replace the flag nodes): the same findings.
pytestmark = pytest.mark.usefixtures("rounding")


def test_a_float16_overflow_names_the_first_op_that_went_non_finite(tf, hand):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        big = tf.multiply(x, 1000.0, name="big")  # 70 * 1000 = 70000 > 65504: inf in float16
        small = tf.subtract(big, big, name="diff")  # inf - inf = NaN downstream
        tf.reduce_sum(small, name="loss")
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        loss = sess.run("loss:0", {"x:0": np.array([70.0, 1.0], np.float32)})
        report = sess.last_report
    assert np.isnan(loss)
    finding = report.non_finite
    assert finding.first_op == "big" and finding.rounded
    assert any("first op whose output became non-finite" in w and "big" in w for w in report.warnings)
    from npu_jupyter._display import html, text
    from npu_jupyter._display.mime import report_payload

    payload = report_payload(report)  # every view shows it, also the JupyterLab renderer (run.nonfinite)
    assert payload["run"]["nonfinite"]["first_op"] == "big" and payload["run"]["nonfinite"]["step"] == 0
    assert "First non-finite value: big at step 0" in text.render(payload)
    assert "big at step 0" in html.render(payload)


def test_a_session_run_stores_its_non_finite_finding_once_and_every_view_reads_that_record(tf, hand):
    """Issue 21: the finding was kept twice (``extra["non_finite"]`` and ``extra["nonfinite"]``)."""
    import dataclasses

    from npu_jupyter._display.mime import report_payload
    from npu_jupyter._runtime.report_records import NonFiniteFinding

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        tf.reduce_sum(tf.multiply(x, 1000.0, name="big"), name="loss")
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        for _ in range(2):  # two non-finite steps: the first one is the finding
            sess.run("loss:0", {"x:0": np.array([70.0, 1.0], np.float32)})
        report = sess.last_report
    holders = [f.name for f in dataclasses.fields(report) if isinstance(getattr(report, f.name), NonFiniteFinding)]
    assert holders == ["non_finite"] and not hasattr(report, "extra")
    finding = report.non_finite
    assert finding.step == 0 and finding.where == "big" and finding.fetches == ("loss:0",)
    assert finding.message == f"Step 0: {finding.reason}"  # the warning names the step, the reason does not
    payload = report_payload(report)
    assert payload["run"]["nonfinite"] == {"first_op": "big", "step": 0, "reason": finding.reason}
    assert finding.message not in payload["warnings"]  # said once, as the labelled fact


def test_a_finite_run_carries_no_non_finite_finding(tf, hand):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        tf.reduce_sum(tf.multiply(x, 2.0, name="twice"), name="loss")
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        sess.run("loss:0", {"x:0": np.array([1.0, 2.0], np.float32)})
        assert sess.last_report.non_finite is None and sess.last_report.emulation


def test_batch_norm_statistics_stay_float32_when_the_op_is_lowered(tf, hand):
    from npu_jupyter._runtime.rewrite import build_private_graph

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4, 2, 2, 3], name="x")
        scale, offset = tf.ones([3]), tf.zeros([3])
        tf.compat.v1.nn.fused_batch_norm(x, scale, offset, is_training=True, name="bn")
    plan = hand.plan(g, {"FusedBatchNormV3"})
    rounded = {(r.kind, r.slot) for r in build_private_graph(g, plan).roundings if r.op == "bn"}
    assert rounded == {("input", 0), ("output", 0)}  # x and y only: scale, offset, mean, variance stay float32


def test_a_variable_an_earlier_run_filled_with_inf_names_the_ops_that_write_it(tf, hand):
    # The first non-finite output is the read of a variable: the inf came from the update of an earlier
    # run (whose fetches were finite), so the finding names the writing op rather than blaming the read.
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        w = tf.compat.v1.get_variable("w", [2], initializer=tf.compat.v1.zeros_initializer(), use_resource=True)
        bump = w.assign_add(tf.multiply(x, 10.0, name="grow"), name="bump", read_value=False)
        loss = tf.reduce_sum(tf.multiply(w.read_value(), 2.0, name="twice"), name="loss")
        init = tf.compat.v1.global_variables_initializer()
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        sess.run(init)
        sess.run(bump, {"x:0": np.array([3e38, 1.0], np.float32)})  # 3e39: inf lands in w, nothing fetched
        wrote = sess.last_report.non_finite  # the writing run is checked: it writes a variable
        assert (wrote.first_op, wrote.written, wrote.writer) == ("grow", "w", "bump")
        assert "the run fetched no value" in wrote.message
        assert np.isinf(sess.run(loss))
        finding = sess.last_report.non_finite
    assert finding.op_type == "ReadVariableOp" and finding.variable == "w"
    assert finding.variable_writers == ("bump",)
    assert "reads the variable w, which already held inf/NaN" in finding.message
    assert "(bump)" in finding.message
    # trial (din_tf_allenyzx, force_fp16): it said "Op outputs are checked as they are computed", yet the
    # op that made the inf in the writing run (grow here, Adam's 0/0 there) was never named
    assert "Op outputs are checked" not in finding.message
    # the finding says where the writing run's own finding is, and which runs are checked
    assert "The report of that run names the op that went non-finite first" in finding.message
    assert "its plan lowers a precision" in finding.message


def test_enable_dump_debug_names_the_op_of_the_run_that_wrote_inf_into_a_variable(tf, hand, tmp_path):
    """What the finding above advises: the writing run, whose fetches were finite, names its op."""
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        w = tf.compat.v1.get_variable("w", [2], initializer=tf.compat.v1.zeros_initializer(), use_resource=True)
        bump = w.assign_add(tf.multiply(x, 10.0, name="grow"), name="bump", read_value=False)
        init = tf.compat.v1.global_variables_initializer()
    cfg = NpuConfig(enable_dump_debug=True, dump_path=str(tmp_path), dump_debug_mode="all")
    with EmulatorSession(cfg, g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        sess.run(init)
        sess.run(bump, {"x:0": np.array([3e38, 1.0], np.float32)})
        assert sess.last_report.overflow_ops == ["grow"] and sess.last_report.non_finite.first_op == "grow"


def test_a_run_fetching_no_float_tensor_and_writing_no_variable_adds_no_flags(tf, hand):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        w = tf.compat.v1.get_variable("w", [2], initializer=tf.compat.v1.zeros_initializer(), use_resource=True)
        step = w.assign_add(tf.multiply(x, 2.0, name="twice"), name="step", read_value=False)
        init = tf.compat.v1.global_variables_initializer()
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        sess.run(init)
        sess.run("twice", {"x:0": np.array([1.0, 2.0], np.float32)})  # the op, not its tensor: nothing to explain
        assert sess.last_report.emulation  # the Mul was rounded
        assert all(run.flags is None for run in sess._exec.runs.values())
        sess.run(step, {"x:0": np.array([1.0, 2.0], np.float32)})  # writes w: whether it wrote inf/NaN is checked
        assert any(run.flags is not None for run in sess._exec.runs.values())
        assert sess.last_report.non_finite is None


def test_a_ref_variable_updated_later_in_the_step_is_checked_before_the_update(tf, hand):
    # w/read aliases the ref variable's buffer. The step overflows in float16 at "big", then writes inf
    # into w and only then produces the fetch. Checked after the fetch, w/read would show the new inf and
    # be named first (it comes first in topological order); it is checked when read, so "big" is named.
    g = tf.Graph()
    with g.as_default():
        w = tf.compat.v1.get_variable("w", [2], initializer=tf.compat.v1.ones_initializer(), use_resource=False)
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        big = tf.multiply(x, 1000.0, name="big")
        total = tf.reduce_sum(big + w, name="total")
        update = tf.compat.v1.assign(w, tf.fill([2], total), name="update")
        with tf.control_dependencies([update]):
            tf.identity(total, name="loss")
        init = tf.compat.v1.global_variables_initializer()
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        sess.run(init)
        assert np.isinf(sess.run("loss:0", {"x:0": np.array([70.0, 1.0], np.float32)}))
        finding = sess.last_report.non_finite
    assert finding.first_op == "big"
    assert finding.variable is None


def _flagged(sess):
    return [name for run in sess._exec.runs.values() if run.flags is not None for name in run.flags[1]]


def test_flags_of_ops_passing_on_checked_values_are_left_out_and_the_first_op_stays_the_same(tf, hand):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        big = tf.multiply(x, 1000.0, name="big")  # 70000: inf in float16
        picked = tf.identity(tf.reshape(tf.nn.relu(big, name="relu"), [2, 1], name="flat"), name="same")
        tf.reduce_sum(picked, name="loss")
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul", "Relu", "Reshape", "Identity"})) as sess:
        assert np.isinf(sess.run("loss:0", {"x:0": np.array([70.0, 1.0], np.float32)}))
        finding = sess.last_report.non_finite
        flagged = _flagged(sess)
    assert finding.first_op == "big" and finding.rounded
    assert "big:0" in flagged and not {"relu:0", "flat:0", "same:0"} & set(flagged)


def test_an_op_reading_a_tensor_through_its_own_rounding_keeps_its_flag(tf, hand):
    # y stays float32 (70000 is finite); the lowered Identity reads it through a float16 rounding (inf):
    # the Identity is the first op whose output is non-finite, so its flag cannot be left out.
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        y = tf.multiply(x, 1000.0, name="y")
        tf.reduce_sum(tf.identity(y, name="i"), name="loss")
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Identity"})) as sess:
        assert np.isinf(sess.run("loss:0", {"x:0": np.array([70.0, 1.0], np.float32)}))
        finding = sess.last_report.non_finite
        assert "i:0" in _flagged(sess)
    assert finding.first_op == "i" and finding.rounded


def test_a_bfloat16_relu_keeps_its_flag(tf, hand):
    # bfloat16 values reach float32's range, so a relu's sum may overflow where its input's does not:
    # only aliases (same values, same sum) are left out then.
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        m = tf.multiply(x, 2.0, name="m")
        tf.reduce_sum(tf.identity(tf.nn.relu(m, name="relu"), name="same"), name="loss")
    plan_fn = hand.plan_fn({"Mul", "Relu", "Identity"}, dtype="bfloat16")
    with EmulatorSession(NpuConfig(), g, plan_fn=plan_fn) as sess:
        sess.run("loss:0", {"x:0": np.array([1.0, -1.0], np.float32)})
        flagged = _flagged(sess)
    assert "relu:0" in flagged and "same:0" not in flagged


def test_a_run_non_finite_for_many_steps_says_its_finding_once(tf, hand):
    """Trial (din_tf_allenyzx, force_fp16): one warning per step, 29 times the same finding."""
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        tf.reduce_sum(tf.multiply(x, 1000.0, name="big"), name="loss")
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        for _ in range(3):
            sess.run("loss:0", {"x:0": np.array([70.0, 1.0], np.float32)})  # 70000 > 65504: inf in float16
        report = sess.last_report
    assert report.steps == 3 and report.non_finite is not None and report.non_finite.step == 0
    assert [w for w in report.warnings if "non-finite" in w] == [report.non_finite.message]


def _adam_over_an_embedding(tf):
    """A float32 graph: Adam over a 4-row embedding table; a batch reads rows 0 and 1 only."""
    g = tf.Graph()
    with g.as_default():
        ids = tf.compat.v1.placeholder(tf.int32, [2], name="ids")
        emb = tf.compat.v1.get_variable("emb", [4, 3], initializer=tf.compat.v1.ones_initializer(), use_resource=True)
        rows = tf.nn.embedding_lookup(emb, ids)
        loss = tf.reduce_sum(rows * rows, name="loss")
        train = tf.compat.v1.train.AdamOptimizer(0.1).minimize(loss)
        init = tf.compat.v1.global_variables_initializer()
    return g, emb, loss, train, init


def _train(sess, init, loss, train, emb, steps):
    """Run ``steps`` training steps fetching the loss: (losses, the table after them, the report)."""
    sess.run(init)
    losses = [sess.run([loss, train], {"ids:0": np.array([0, 1], np.int32)})[0] for _ in range(steps)]
    report = sess.last_report
    return losses, sess.run(emb), report


def test_a_step_writing_nan_into_an_embedding_names_the_op_and_the_variable(tf, hand):
    """Trial (din_tf_allenyzx, force_fp16): sparse Adam's epsilon (1e-8) rounds to 0 in float16, so its
    update divides 0/0 on the rows a batch did not touch and writes NaN there. The fetched loss stays
    finite; the report said nothing at step 0 and, later, blamed the read of the embedding."""
    g, emb, loss, train, init = _adam_over_an_embedding(tf)
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"RealDiv", "Sqrt", "AddV2", "Mul"})) as sess:
        losses, table, report = _train(sess, init, loss, train, emb, 3)
    assert np.isfinite(losses).all() and np.isnan(table[2:]).all()  # the repro: rows 2 and 3 hold NaN
    finding = report.non_finite
    assert finding is not None and finding.step == 0 and finding.fetches == ()
    assert finding.first_op == "Adam/update_emb/truediv_1" and finding.op_type == "RealDiv" and finding.rounded
    assert finding.written == "emb" and finding.writer == "Adam/update_emb/AssignSubVariableOp"
    assert finding.variable is None  # the step made the NaN itself: it read no non-finite variable
    assert "wrote non-finite values (inf/NaN) into the variable emb" in finding.message
    # the cause names the divisor rounded to 0, not only overflow, which a 0/0 is not
    assert "a 1e-8 epsilon among them) rounds to 0, which RealDiv turns into inf or NaN" in finding.message
    assert [w for w in report.warnings if "non-finite" in w] == [finding.message]  # said once in 3 steps


def test_a_clean_adam_run_over_an_embedding_says_nothing(tf, hand):
    g, emb, loss, train, init = _adam_over_an_embedding(tf)
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul"})) as sess:  # epsilon stays float32
        losses, table, report = _train(sess, init, loss, train, emb, 3)
        assert any(run.flags is not None for run in sess._exec.runs.values())  # checked, and clean
    assert np.isfinite(losses).all() and np.isfinite(table).all()
    assert report.emulation and report.non_finite is None
    assert not [w for w in report.warnings if "non-finite" in w]


def test_a_ref_variable_assigned_a_float16_overflow_is_named_with_finite_fetches(tf, hand):
    g = tf.Graph()
    with g.as_default():
        w = tf.compat.v1.get_variable("w", [2], initializer=tf.compat.v1.zeros_initializer(), use_resource=False)
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        update = tf.compat.v1.assign(w, tf.multiply(x, 1000.0, name="big"), name="update")  # 70000: inf
        loss = tf.reduce_sum(tf.add(x, 1.0, name="plus"), name="loss")
        init = tf.compat.v1.global_variables_initializer()
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        sess.run(init)
        got, _ = sess.run([loss, update.op], {"x:0": np.array([70.0, 1.0], np.float32)})
        finding = sess.last_report.non_finite
        assert np.isfinite(got) and np.isinf(sess.run(w)).any()
    assert finding.first_op == "big" and finding.written == "w" and finding.writer == "update"
    assert "values beyond the float16 range (65504) become inf" in finding.message
    assert "rounds to 0" not in finding.message  # a Mul overflows; no divisor to underflow


def test_a_by_design_inf_written_into_a_variable_says_nothing(tf, hand):
    # -inf from a constant (a running maximum's start) passed on through an Identity, whose flag could be
    # left out, and added to the input: float32 writes -inf too, so it is no finding.
    g = tf.Graph()
    with g.as_default():
        w = tf.compat.v1.get_variable("w", [2], initializer=tf.compat.v1.zeros_initializer(), use_resource=True)
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        lowest = tf.identity(tf.constant([-np.inf, -np.inf], tf.float32), name="lowest")
        start = w.assign(tf.add(lowest, x, name="start"), name="reset", read_value=False)
        loss = tf.reduce_sum(tf.multiply(x, 2.0, name="twice"), name="loss")
        init = tf.compat.v1.global_variables_initializer()
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        sess.run(init)
        got, _ = sess.run([loss, start], {"x:0": np.array([1.0, 2.0], np.float32)})
        report, flagged = sess.last_report, _flagged(sess)
        assert np.isfinite(got) and np.isneginf(sess.run(w)).all()
    assert {"start:0", "lowest:0"} <= set(flagged)  # the by-design rule judges start by lowest's flag
    assert report.emulation and report.non_finite is None


def test_an_update_in_a_branch_not_taken_says_nothing(tf, hand):
    """A write reading a dead value (the Switch output of the branch not taken) writes nothing: no finding."""
    from tensorflow.python.ops import control_flow_ops

    g = tf.Graph()
    with g.as_default():
        w = tf.compat.v1.get_variable("w", [2], initializer=tf.compat.v1.zeros_initializer(), use_resource=False)
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        big = tf.multiply(x, 1000.0, name="big")  # 70000: inf in float16
        finite = tf.reduce_all(tf.math.is_finite(big), name="finite")
        _, taken = control_flow_ops.switch(big, finite, name="skip")
        update = tf.compat.v1.assign(w, taken, name="update")
        loss = tf.reduce_sum(tf.add(x, 1.0, name="plus"), name="loss")
        init = tf.compat.v1.global_variables_initializer()
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        sess.run(init)
        got, _ = sess.run([loss, update.op], {"x:0": np.array([70.0, 1.0], np.float32)})
        report = sess.last_report
        assert np.isfinite(got) and np.isfinite(sess.run(w)).all()
    assert report.emulation and report.non_finite is None


def _gradient_overflow_step(tf):
    """A training step whose float16 weight gradient overflows (8 rows of 1e4 * 2 = 1.6e5 > 65504) on its
    way to the update, while the loss stays finite (each row's 3e4 * 2 = 6e4 fits float16; the sum is float32).

    The gradient reaches ApplyGradientDescent through ``tuple/control_dependency_1``, an Identity: its
    value is a variable write's input, so its flag is always kept, and it is the MatMul gradient's own.
    """
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [8, 3], name="x")
        w = tf.compat.v1.get_variable("w", initializer=np.ones((3, 1), np.float32), use_resource=True)
        loss = tf.reduce_sum(tf.matmul(x, w) * 2.0, name="loss")
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        init = tf.compat.v1.global_variables_initializer()
    return g, loss, train, init


def _finding_and_flags(tf, hand, monkeypatch, share):
    from npu_jupyter._runtime.session import observe_nodes

    if not share:
        monkeypatch.setattr(observe_nodes._Builder, "copied_flags", lambda self, needed, tensors, guarded: {})
    g, loss, train, init = _gradient_overflow_step(tf)
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"MatMul", "Mul", "Identity"})) as sess:
        sess.run(init)
        assert np.isfinite(sess.run([loss, train], {"x:0": np.full((8, 3), 1e4, np.float32)})[0])
        (run,) = [r for r in sess._exec.runs.values() if r.flags is not None]
        sums = [op for op in run.graph.get_operations() if op.name.startswith(run.prefix + "npu_emu_watch")]
        return sess.last_report.non_finite, list(run.flags[1]), run.flag_take, len(sums)


def test_a_gradients_control_dependency_shares_the_gradients_flag_and_the_finding_is_the_same(tf, hand, monkeypatch):
    """ResNet-50's step summed each weight gradient twice (192 of its 1,084 flags were such copies)."""
    shared = _finding_and_flags(tf, hand, monkeypatch, share=True)
    monkeypatch.undo()
    each = _finding_and_flags(tf, hand, monkeypatch, share=False)
    finding, listed, take, nodes = shared
    copy = "gradients/MatMul_grad/tuple/control_dependency_1:0"
    assert copy in listed and listed == each[1]  # every needed tensor is still listed, in the same order
    assert take is not None and each[2] is None
    assert take[listed.index(copy)] == take[listed.index("gradients/MatMul_grad/MatMul_1:0")]
    assert nodes < each[3]  # fewer watch nodes: the copy is not summed again
    assert finding is not None and each[0] is not None
    assert (finding.first_op, finding.written) == ("gradients/MatMul_grad/MatMul_1", "w")  # the weight gradient
    assert (finding.first_op, finding.written, finding.writer) == (each[0].first_op, each[0].written, each[0].writer)
    assert finding.message == each[0].message


def test_the_overflow_cause_says_an_ascend910_clamps_where_the_emulation_gives_inf(tf):
    """The CANN loss-scale docs: the Atlas training series' only overflow mode is saturation (results
    saturate to ±MAX, the float-status register records it); Atlas A2 defaults to INF/NaN. The emulator
    computes IEEE inf on both, so only the 910's finding says what the device would hold instead."""
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4, 4], name="x")
        tf.reduce_sum(tf.matmul(x, x, name="mm"), name="loss")  # 4 * 300 * 300 = 360000 > 65504
    said = {}
    for soc in ("Ascend910A", "Ascend910B3"):
        with EmulatorSession(NpuConfig(precision_mode="allow_mix_precision", soc_config=soc), g) as sess:
            assert np.isinf(sess.run("loss:0", {"x:0": np.full((4, 4), 300.0, np.float32)}))
            finding = sess.last_report.non_finite
        assert finding.first_op == "mm" and finding.rounded and finding.decided_dtype == "float16"
        said[soc] = finding.message
    clamp = "an Ascend910 (saturation mode, its only one) clamps an overflow to ±65504 instead"
    assert "values beyond the float16 range (65504) become inf. That inf is the emulation's" in said["Ascend910A"]
    assert clamp in said["Ascend910A"] and "float-status register" in said["Ascend910A"]
    assert "become inf. Whether float32 stays finite" in said["Ascend910B3"] and "clamps" not in said["Ascend910B3"]


def test_a_float32_cause_and_a_host_side_value_say_nothing_of_saturation():
    from npu_jupyter._runtime.observe.run_notes import non_finite_cause

    assert "clamps" not in non_finite_cause(False, "float32", "Log", "Ascend910")  # not stored in half precision
    assert "clamps" not in non_finite_cause(True, "float16", "RealDiv", "")  # no plan SoC known
    both = non_finite_cause(True, "float16", "RealDiv", "Ascend910")
    assert both.index("turns into inf or NaN") < both.index("clamps an overflow to ±65504")


def _train_only(scale: float):
    """Three steps of tests/models.py's MLP under allow_mix_precision, running only the train op."""
    import models

    model = models.mlp_v1()
    with EmulatorSession(NpuConfig(precision_mode="allow_mix_precision"), model.graph) as sess:
        sess.run(list(model.init_ops))
        for step in range(3):
            sess.run(model.train_op, {k: v * scale for k, v in model.feed_dict_fn(8 + step).items()})
        return sess.last_report, sess.run("mlp/w1:0")


def test_a_train_op_alone_that_writes_nan_into_a_variable_is_reported():
    """A run fetching no tensor still gets the flags when it writes variables (it had none before)."""
    report, w1 = _train_only(3e4)  # 30000 x inputs: the first MatMul overflows float16
    assert np.isnan(w1).any()
    finding = report.non_finite
    assert finding is not None and finding.step == 0
    assert finding.first_op == "mlp/MatMul" and finding.written is not None and finding.writer.startswith("train/")
    assert "the run fetched no value" in finding.message and "no fetched value" not in finding.message
    assert report.warnings == [finding.message]


def test_a_train_op_alone_that_stays_finite_says_nothing():
    report, w1 = _train_only(1.0)
    assert np.isfinite(w1).all()
    assert report.non_finite is None
    assert not any("non-finite" in w for w in report.warnings)
