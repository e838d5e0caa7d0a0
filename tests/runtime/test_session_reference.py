"""The float32 reference of a session step (``_runtime/session/reference.py``) reads the step's own data."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.session.emulator import EmulatorSession


def _sparse_iterator_graph(tf):
    """A TF1 input pipeline as the zoo's Wide & Deep builds it: an initializable iterator whose element
    holds a SparseTensor (a variant output of ``IteratorGetNext``, decoded by ``DeserializeSparse``)."""
    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        dense = np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32)
        ids = tf.sparse.from_dense(np.tile(np.array([[1, 0, 2]], np.int64), (32, 1)))
        labels = (np.arange(32) % 2).astype(np.float32).reshape(-1, 1)
        ds = tf.data.Dataset.from_tensor_slices(({"x": dense, "ids": ids}, labels)).repeat().batch(4)
        iterator = v1.data.make_initializable_iterator(ds)
        features, y = iterator.get_next()
        table = v1.get_variable("emb", [3, 2], initializer=v1.glorot_uniform_initializer(seed=1))
        emb = tf.nn.embedding_lookup_sparse(table, features["ids"], None, combiner="mean", name="lookup")
        w = v1.get_variable("w", [6, 1], initializer=v1.glorot_uniform_initializer(seed=2))
        logits = tf.matmul(tf.concat([features["x"], emb], 1), w, name="logits")
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits), name="loss")
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = [v1.global_variables_initializer(), iterator.initializer]
    return g, init, loss, train


def test_a_sparse_dataset_element_reaches_the_reference_without_running_its_iterator(tf):
    """Zoo widedeep: 'IteratorGetNext … not initialized' with the reference on (its variant outputs went unfed)."""
    g, init, loss, train = _sparse_iterator_graph(tf)
    types = [t.dtype.name for t in g.get_operation_by_name("IteratorGetNext").outputs]
    assert "variant" in types  # the case under test: the sparse element is a variant output
    with EmulatorSession(NpuConfig(precision_mode="allow_mix_precision"), g, reference=True) as sess:
        sess.run(init)
        losses = [sess.run([loss, train])[0] for _ in range(2)]
        report = sess.last_report
    assert np.isfinite(losses).all()
    assert report.reference_steps == 2
    # The reference decoded the same sparse ids: the lookup, upstream of every rounding, matches exactly.
    assert report.drift["lookup"]["max_abs"] == 0.0
    assert report.drift["logits"]["max_abs"] > 0.0  # and the float16 MatMul drifted


def test_each_ops_drift_is_its_worst_over_the_steps_with_a_reference_not_the_last_steps(tf, hand):
    """A report of 3 steps showed the last step's drift although its docstring said "worst of any output"."""
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [1, 2], name="x")
        w = tf.compat.v1.get_variable("w", initializer=tf.constant([[0.5], [0.25]]))
        tf.matmul(x, w, name="y")
        init = tf.compat.v1.global_variables_initializer()
    feeds = [[[1.0, 2.0]], [[1.0001, 2.0]], [[1.0, 2.0]]]  # only step 1's 1.0001 is not a float16 value
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"MatMul"}), reference=True) as sess:
        sess.run(init)
        for feed in feeds:
            sess.run("y:0", {x: feed})
        report = sess.last_report
    row = report.drift["y"]
    assert report.steps == 3 and report.reference_steps == 3
    assert row["step"] == 1  # the step that drifted, not the last one (which matched float32 exactly)
    assert row["max_abs"] == pytest.approx(0.5e-4, rel=0.05)
    assert row["rel_rmse"] == pytest.approx(0.5e-4 / 1.00005, rel=0.05)


def test_the_reference_draws_what_the_step_drew_so_dropout_shows_no_drift(tf, hand):
    """ModelZoo STNet_ID2360 (npu_ops.dropout) under --reference: the reference session drew its own dropout
    mask, so RandomUniform led the drift ranking (rel. RMSE 0.73) with every op after it, none of it the
    precision's. Fed the step's draws, the random ops show none: only what the plan lowers (MatMul) drifts."""
    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [8, 16], name="x")
        w = v1.get_variable("w", [16, 16], initializer=v1.glorot_uniform_initializer(seed=1))
        kept = tf.nn.dropout(tf.matmul(x, w), rate=0.5, name="drop")
        loss = tf.reduce_mean(kept, name="loss")
        eval_loss = tf.reduce_sum(tf.nn.dropout(x, rate=0.5), name="eval")  # another run graph drawing too
        init = v1.global_variables_initializer()
    feed = {x: np.random.default_rng(0).normal(size=(8, 16)).astype(np.float32)}
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"MatMul"}), reference=True) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(eval_loss, feed)
            sess.run(loss, feed)
        reports = [r for r in sess.reports if r.fetches == ["loss:0"]]
    random_ops = [name for name in reports[0].plan.ops if reports[0].plan.ops[name].op_type == "RandomUniform"]
    assert random_ops and all(r.reference_steps for r in reports)
    drawn = {op: row for r in reports for op, row in r.drift.items() if op in random_ops and row.get("max_abs")}
    assert not drawn  # the same numbers as the step drew
    assert any(row.get("max_abs") for r in reports for op, row in r.drift.items() if op == "MatMul")  # not vacuous


def _masked_attention(tf, fill):
    """Scores masked with a ``fill`` constant before a softmax, as a TF1 Transformer masks padding."""
    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        q = v1.placeholder(tf.float32, [2, 4, 8], name="q")
        w = v1.get_variable("w", [8, 8], initializer=v1.glorot_uniform_initializer(seed=3))
        scores = tf.matmul(tf.tensordot(q, w, 1), q, transpose_b=True, name="scores")
        keep = tf.constant(np.triu(np.ones((4, 4), bool)), name="keep")
        masked = tf.where(tf.broadcast_to(keep, [2, 4, 4]), scores, tf.fill([2, 4, 4], fill), name="masked")
        loss = tf.reduce_mean(tf.nn.softmax(masked) * scores, name="loss")
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = v1.global_variables_initializer()
    return g, init, loss, train


@pytest.mark.parametrize("fill", [-1e9, 1e9])
def test_a_float16_overflow_the_results_never_see_is_said_harmless_and_one_they_see_is_not(tf, fill):
    """transformer_nmt under force_fp16: its -1e9 mask Fill is -inf in float16 and ranked as the largest drift in an
    "ok" run. A +1e9 fill overflows too, but the softmax of +inf is NaN: the loss is non-finite, a finding."""
    from npu_jupyter._display.mime import report_payload

    g, init, loss, train = _masked_attention(tf, fill)
    feed = {"q:0": np.random.default_rng(0).normal(size=(2, 4, 8)).astype(np.float32)}
    with EmulatorSession(NpuConfig(precision_mode="force_fp16"), g, reference=True) as sess:
        sess.run(init)
        value = sess.run([loss, train], feed)[0]
        report = sess.last_report
    notes = " ".join(report_payload(report).get("notes") or [])
    fills = [op for op, row in report.drift.items() if op.startswith("Fill") and not np.isfinite(row["rel_rmse"])]
    assert fills, report.drift.keys()  # the fill overflowed in float16 where float32 holds ±1e9
    if fill < 0:
        assert np.isfinite(value) and report.non_finite is None
        assert "Overflows that did not reach the results: Fill" in notes
    else:
        assert not np.isfinite(value) and report.non_finite is not None
        assert "did not reach the results" not in notes


def test_a_session_counts_the_steps_whose_outputs_overflowed_where_float32_did_not(tf):
    """The overflow note says in how many of the compared steps it happened (every step, for a -1e9 mask)."""
    from npu_jupyter._display.mime import report_payload

    g, init, loss, train = _masked_attention(tf, -1e9)
    feed = {"q:0": np.random.default_rng(0).normal(size=(2, 4, 8)).astype(np.float32)}
    with EmulatorSession(NpuConfig(precision_mode="force_fp16"), g, reference=True) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run([loss, train], feed)
        report = sess.last_report
    assert report.reference_steps == 3 and report.overflow_steps == 3
    notes = " ".join(report_payload(report).get("notes") or [])
    assert "(in 3 of the 3 steps compared, measured)" in notes
    with EmulatorSession(NpuConfig(precision_mode="force_fp32"), g, reference=True) as sess:
        sess.run(init)
        sess.run([loss, train], feed)
        assert sess.last_report.overflow_steps == 0  # float32 holds -1e9: nothing overflowed
