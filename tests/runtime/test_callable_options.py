"""EmulatorSession._make_callable_from_options: the private Session method Keras 2's graph-mode fit calls."""

from __future__ import annotations

import concurrent.futures

import numpy as np
import pytest

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.session.emulator import EmulatorSession


def _counter_graph(tf):
    """x -> y = 2x, and an op that counts its runs (a Keras update op's stand-in)."""
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None], name="x")
        tf.multiply(x, 2.0, name="y")
        count = tf.compat.v1.get_variable("count", initializer=0.0, use_resource=True)
        bump = count.assign_add(1.0, read_value=False, name="bump")
        init = tf.compat.v1.global_variables_initializer()
    return g, count, bump, init


def _options(tf, feeds, fetches, targets):
    from tensorflow.core.protobuf import config_pb2  # what Keras 2's backend builds

    opts = config_pb2.CallableOptions()
    opts.feed.extend(feeds)
    opts.fetch.extend(fetches)
    opts.target.extend(targets)
    return opts


def test_the_callable_feeds_positionally_fetches_a_list_and_runs_its_targets(tf, hand):
    g, count, bump, init = _counter_graph(tf)
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn()) as sess:
        sess.run(init)
        call = sess._make_callable_from_options(_options(tf, ["x:0"], ["y:0"], [bump.name]))
        call(np.array([1.0, 3.0], np.float32), run_metadata=None)  # as Keras calls it
        out = call(np.array([1.0, 3.0], np.float32))
        assert isinstance(out, list) and len(out) == 1
        np.testing.assert_array_equal(out[0], [2.0, 6.0])
        assert sess.run(count) == 2.0  # the target ran on each call
        assert sess.last_report is not None  # a step of the emulator, reported as any run


def test_a_wrong_number_of_fed_values_and_tensor_connections_are_one_clear_error(tf, hand):
    g, _, bump, init = _counter_graph(tf)
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn()) as sess:
        sess.run(init)
        call = sess._make_callable_from_options(_options(tf, ["x:0"], ["y:0"], []))
        with pytest.raises(ValueError, match=r"takes 1 fed value\(s\) \(x:0\), got 0"):
            call()
        opts = _options(tf, [], ["y:0"], [])
        link = opts.tensor_connection.add()
        link.from_tensor, link.to_tensor = "y:0", "x:0"
        with pytest.raises(NotImplementedError, match="tensor_connection"):
            sess._make_callable_from_options(opts)


def _keras2():
    """Keras 2 and its backend module (tf_keras, or TF 2.6's own keras package); skip without one."""
    try:
        import tf_keras as keras
        from tf_keras.src import backend
    except ImportError:
        keras = pytest.importorskip("keras")
        if int(keras.__version__.split(".")[0]) >= 3:
            pytest.skip("needs Keras 2 (tf_keras or TensorFlow 2.6's keras)")
        from keras import backend
    return keras, backend


def test_keras2_fit_in_graph_mode_trains_on_an_emulator_session(tf, hand):
    keras, backend = _keras2()

    def script():
        g = tf.Graph()
        with g.as_default():  # graph mode: Keras 2 picks its v1 training loop, whose functions are callables
            model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
            model.compile(optimizer=tf.compat.v1.train.GradientDescentOptimizer(0.1), loss="mse")
            sess = EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"MatMul"}))
            backend.set_session(sess)
            try:
                x, y = np.ones((4, 2), np.float32), np.ones((4, 1), np.float32)
                history = model.fit(x, y, batch_size=4, epochs=3, verbose=0)
            finally:
                backend.set_session(None)  # Keras forgets the emulator session
                sess.close()
        return history.history["loss"], sess.last_report

    # In a thread of its own: Keras 2 prefers a default session to the one set, and this thread's
    # default-session stack may hold another test's (both are thread-local).
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        losses, report = pool.submit(script).result()
    assert len(losses) == 3 and losses[-1] < losses[0]
    assert report is not None and report.steps >= 1
