"""set_keras_session_npu_config / npu_clear_session: Keras 2's global session is an emulator session."""

from __future__ import annotations

import concurrent.futures
import sys
import types

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")


@pytest.fixture
def keras2_backend(monkeypatch):
    """Keras 2's backend module as ``tf.compat.v1.keras.backend`` (tf_keras here, TF 2.6's own keras there)."""
    backend = getattr(getattr(tf.compat.v1, "keras", None), "backend", None)
    if not callable(getattr(backend, "set_session", None)):
        tf_keras_backend = pytest.importorskip("tf_keras.src.backend")
        backend = tf_keras_backend
        monkeypatch.setattr(tf.compat.v1, "keras", types.SimpleNamespace(backend=backend))
    yield backend
    backend.set_session(None)


def _global_session(backend):
    """The session Keras 2 set (get_session() would prefer a default session another test left open)."""
    return sys.modules[backend.set_session.__module__]._SESSION.session  # the module behind the API one


def test_the_migrated_keras_idiom_trains_on_an_emulator_session_with_the_npu_config(emulated, keras2_backend):
    from npu_bridge.npu_init import close_session, set_keras_session_npu_config

    from npu_jupyter._runtime.session.emulator import EmulatorSession

    keras = pytest.importorskip("tf_keras") if keras2_backend.__name__.startswith("tf_keras") else tf.keras

    def script():
        g = tf.Graph()
        with g.as_default():  # TF 1.15's graph mode: Keras 2's v1 training loop runs in the global session
            config = tf.compat.v1.ConfigProto()
            custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
            custom_op.name = "NpuOptimizer"
            custom_op.parameter_map["precision_mode"].s = b"allow_mix_precision"
            sess = set_keras_session_npu_config(config=config)
            assert isinstance(sess, EmulatorSession) and _global_session(keras2_backend) is sess
            assert sess.config.precision_mode == "allow_mix_precision"  # the script's NpuOptimizer entry is read
            assert config.graph_options.rewrite_options.remapping == 2  # the adapter's edits, in place (OFF)
            model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
            model.compile(optimizer=tf.compat.v1.train.GradientDescentOptimizer(0.1), loss="mse")
            x, y = np.ones((4, 2), np.float32), np.ones((4, 1), np.float32)
            model.fit(x, y, batch_size=4, epochs=1, verbose=0)
            assert sess.last_report is not None and sess.last_report.steps == 1
            close_session(sess)

    # In a thread of its own, as a script's main thread: Keras 2 prefers a default session to its global
    # one, and this thread's default-session stack may hold another test's (both are thread-local).
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(script).result()


def test_npu_clear_session_sets_a_new_emulator_session(emulated, keras2_backend):
    from npu_bridge.npu_init import npu_clear_session, set_keras_session_npu_config

    first = set_keras_session_npu_config()
    npu_clear_session()
    second = _global_session(keras2_backend)
    assert second is not first and type(second) is type(first)


def test_keras3_has_no_session_to_set_and_says_what_to_do(emulated, monkeypatch):
    from npu_bridge.npu_init import set_keras_session_npu_config

    monkeypatch.setattr(tf.compat.v1, "keras", types.SimpleNamespace(backend=types.SimpleNamespace()))
    with pytest.raises(RuntimeError, match=r"set_keras_session_npu_config .* Keras 3.*TF_USE_LEGACY_KERAS=1"):
        set_keras_session_npu_config()
