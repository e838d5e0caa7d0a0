"""Emulated steps run as compiled callables of the inner session, with exactly Session.run's results and errors."""

from __future__ import annotations

import collections
import contextlib

import numpy as np
import pytest

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.session.emulator import EmulatorSession
from npu_jupyter._runtime.session.fast_run import structure_key


def _graph(tf):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
        w = tf.compat.v1.get_variable("w", [4, 3], initializer=tf.compat.v1.ones_initializer())
        y = tf.matmul(x, w, name="y")
        total = tf.reduce_sum(y, name="total")
        # The update waits for the sum, so fetching both in one run has one answer (without the
        # dependency TensorFlow may run them in either order, in either session).
        with tf.control_dependencies([total]):
            step = tf.compat.v1.assign_add(w, tf.ones_like(w), name="step")
        init = tf.compat.v1.global_variables_initializer()
    return g, x, y, total, step, init


@contextlib.contextmanager
def _emulated_and_plain(tf, g, init=None):
    """An allow_mix_precision emulator session and a plain session on ``g``, both initialised by ``init``."""
    with EmulatorSession(NpuConfig(precision_mode="allow_mix_precision"), g) as sess, tf.compat.v1.Session(
        graph=g
    ) as plain:
        if init is not None:
            sess.run(init)
            plain.run(init)
        yield sess, plain


def _compiled(sess):
    """Steps holding a callable (each one a TensorFlow executor of its run graph)."""
    return sum(step is not None and step.call is not None for step in sess._exec.fast._steps.values())


def test_repeated_steps_run_as_one_compiled_callable_with_session_run_results(tf):
    g, x, y, total, step, init = _graph(tf)
    feed = {x: np.ones((2, 4), np.float32)}
    pair = collections.namedtuple("pair", "y total")
    with _emulated_and_plain(tf, g, init) as (sess, plain):
        for fetches in ([y, total], (total, step), {"t": total, "s": step}, pair(y, total), total, step):
            ours, theirs = sess.run(fetches, feed), plain.run(fetches, feed)
            assert type(ours) is type(theirs)
            assert str(ours) == str(theirs)
        compiled = _compiled(sess)
        assert compiled >= 6, "each fetch structure is compiled once"
        for _ in range(3):
            sess.run([y, total], feed)
        assert _compiled(sess) == compiled, "and reused"
        assert sess.last_report.steps == 3


def test_feeds_session_run_would_convert_or_reject_go_through_session_run(tf):
    g, x, y, total, _step, init = _graph(tf)
    with _emulated_and_plain(tf, g, init) as (sess, plain):
        # float64 and a nested list are converted by Session.run, as for a plain session
        for value in (np.ones((2, 4)), [[1.0, 2.0, 3.0, 4.0]]):
            np.testing.assert_array_equal(sess.run(y, {x: value}), plain.run(y, {x: value}))
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            sess.run(y, {x: np.ones((2, 5), np.float32)})
        # a fetched tensor that is also fed comes back as fed
        fed = np.full((1, 3), 7.0, np.float32)
        np.testing.assert_array_equal(sess.run(y, {x: np.ones((1, 4), np.float32), y: fed}), fed)


def test_a_step_whose_feeds_need_session_run_never_makes_a_callable(tf):
    """A callable is a second executor of the run graph (tens of seconds for a large model) that such a
    step would never use: a step first fed a nested list (Session.run converts it) stays there."""
    g, x, y, total, _step, init = _graph(tf)
    with _emulated_and_plain(tf, g, init) as (sess, plain):
        made = _compiled(sess)  # the initializer's step: no feeds, compiled
        for value in ([[1.0] * 4] * 2, np.ones((2, 4), np.float32), np.full((2, 4), 3.0, np.float32)):
            np.testing.assert_array_equal(sess.run(total, {x: value}), plain.run(total, {x: value}))
        assert _compiled(sess) == made, "the step ran through Session.run first: it keeps its one executor there"
        sess.run(y, {x: np.ones((2, 4), np.float32)})
        assert _compiled(sess) == made + 1, "a step whose feeds fit from its first run is compiled"


def test_python_scalar_feeds_run_compiled_with_session_runs_values_and_errors(tf):
    """Scripts feed a learning rate as a Python float, a flag as a bool, a step as an int: such steps run
    as a callable, fed what Session.run would convert them to, and what Session.run refuses it still refuses."""
    g, x, _y, total, _step, init = _graph(tf)
    with g.as_default():
        rate = tf.compat.v1.placeholder(tf.float32, [], name="rate")
        flag = tf.compat.v1.placeholder(tf.bool, [], name="flag")
        count = tf.compat.v1.placeholder(tf.int32, [], name="count")
        pair = tf.compat.v1.placeholder(tf.float32, [2], name="pair")
        out = tf.where(flag, total * rate, total) + tf.cast(count, tf.float32)
    with _emulated_and_plain(tf, g, init) as (sess, plain):
        made = _compiled(sess)
        ones = np.ones((2, 4), np.float32)
        for value, on, k in ((0.1, True, 3), (0.7, False, 5), (1e-3, True, -2), (0.1, 1, True)):
            feed = {x: ones, rate: value, flag: on, count: k}
            np.testing.assert_array_equal(sess.run(out, feed), plain.run(out, feed))
        assert _compiled(sess) == made + 1, "the scalar-fed step is compiled once and reused"
        for bad, error in (({count: 2**40}, (TypeError, OverflowError)), ({rate: np.ones(2, np.float32)}, ValueError)):
            feed = {x: ones, rate: 0.1, flag: True, count: 1, **bad}
            with pytest.raises(error) as ours:
                sess.run(out, feed)
            with pytest.raises(error) as theirs:
                plain.run(out, feed)
            assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            sess.run(pair * 2.0, {pair: 0.5})


def test_a_scalar_fed_to_a_string_tensor_raises_session_runs_type_error(tf):
    g = tf.Graph()
    with g.as_default():
        text = tf.compat.v1.placeholder(tf.string, [], name="text")
        length = tf.strings.length(text)
    with _emulated_and_plain(tf, g) as (sess, plain):
        assert sess.run(length, {text: np.array(b"abc", dtype=object)}) == 3  # a step that runs compiled
        for value in (5, True):
            with pytest.raises(TypeError) as ours:
                sess.run(length, {text: value})
            with pytest.raises(TypeError) as theirs:
                plain.run(length, {text: value})
            assert str(ours.value) == str(theirs.value)


def test_an_op_error_in_a_compiled_step_reads_as_session_runs(tf):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None], name="x")
        checked = tf.debugging.check_numerics(x * 2.0, "bad value", name="checked")
    with EmulatorSession(NpuConfig(precision_mode="allow_mix_precision"), g) as sess:
        sess.run(checked, {x: np.ones(2, np.float32)})
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad value") as error:
            sess.run(checked, {x: np.array([np.inf], np.float32)})
    assert error.value.op is not None, "the failing op is named, as Session.run's errors name it"


def test_structure_key_spells_nested_names_and_refuses_other_leaves():
    assert structure_key(["a:0", ("b", {"k": "c:0"})]) == structure_key(["a:0", ("b", {"k": "c:0"})])
    assert structure_key(["a:0"]) != structure_key(("a:0",))
    assert structure_key(["a:0", object()]) is None
