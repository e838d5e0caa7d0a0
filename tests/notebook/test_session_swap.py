"""tf.compat.v1.Session is swapped for NPU sessions only while a %%npu cell runs."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from npu_jupyter._notebook.session_swap import CellSessions, swapped_sessions
from npu_jupyter._options.config import NpuConfig


def _user_proto(**entries):
    """A ConfigProto as users write it by hand, with their own NpuOptimizer entries."""
    proto = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=2)
    custom = proto.graph_options.rewrite_options.custom_optimizers.add()
    custom.name = "NpuOptimizer"
    for key, value in entries.items():
        if isinstance(value, bool):
            custom.parameter_map[key].b = value
        elif isinstance(value, int):
            custom.parameter_map[key].i = value
        else:
            custom.parameter_map[key].s = value.encode()
    return proto


def test_cell_flags_beat_user_entries_which_beat_the_session_config():
    session_config = NpuConfig(precision_mode="allow_fp32_to_fp16", mix_compile_mode=True, enable_dump=False)
    cell = CellSessions(session_config, {"precision_mode": "force_fp16", "precision_mode_v2": None}, "emulator")
    config = cell.config_for(_user_proto(precision_mode="force_fp32", mix_compile_mode=False))
    assert config.precision_mode == "force_fp16"  # cell flag wins
    assert config.mix_compile_mode is False  # user's entry beats the session config
    assert config.enable_dump is False  # only the session config said anything


def test_user_precision_v2_replaces_session_precision_mode_instead_of_conflicting():
    cell = CellSessions(NpuConfig(precision_mode="force_fp32"), {}, "emulator")
    config = cell.config_for(_user_proto(precision_mode_v2="mixed_float16"))
    assert config.changed() == {"precision_mode_v2": "mixed_float16"}


def test_proto_without_npu_entries_and_no_proto_take_the_session_config():
    cell = CellSessions(NpuConfig(precision_mode="force_fp32"), {}, "emulator")
    assert cell.config_for(None).changed() == {"precision_mode": "force_fp32"}
    assert cell.config_for(tf.compat.v1.ConfigProto()).changed() == {"precision_mode": "force_fp32"}


def test_session_classes_are_restored_when_the_block_raises():
    original_session, original_interactive = tf.compat.v1.Session, tf.compat.v1.InteractiveSession
    cell = CellSessions(NpuConfig(), {}, "emulator")
    with pytest.raises(RuntimeError, match="boom"), swapped_sessions(cell):
        assert tf.compat.v1.Session is not original_session
        assert tf.compat.v1.InteractiveSession is not original_interactive
        raise RuntimeError("boom")
    assert tf.compat.v1.Session is original_session
    assert tf.compat.v1.InteractiveSession is original_interactive


def test_monitored_training_sessions_in_the_block_are_cell_sessions_and_restored_after(tmp_path):
    from tensorflow.python.client import session
    from tensorflow.python.training import session_manager

    g = tf.Graph()
    with g.as_default():
        w = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.ones_initializer())
        step = tf.compat.v1.train.get_or_create_global_step()
        train_op = tf.compat.v1.assign_add(step, 1)
    cell = CellSessions(NpuConfig(), {"precision_mode": "force_fp16"}, "emulator")
    with swapped_sessions(cell), g.as_default():
        hooks = [tf.compat.v1.train.StopAtStepHook(last_step=2)]
        with tf.compat.v1.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=hooks) as mon:
            while not mon.should_stop():
                mon.run([train_op, w])
            raw = mon._tf_sess()
    assert cell.sessions == [raw] and raw.backend == "emulator" and raw.config.precision_mode == "force_fp16"
    assert session_manager.session is session  # the SessionManager's module is back


CELL = """
import numpy as np
import tensorflow as tf
g = tf.Graph()
with g.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [2, 4], name="x")
    y = tf.matmul(x, tf.ones([4, 3]), name="mm")
with tf.compat.v1.Session(graph=g) as sess:
    out = sess.run(y, {x: np.ones((2, 4), np.float32)})
"""


def test_a_cell_checks_its_config_once_and_leaves_no_marks_on_the_users_config(ip, monkeypatch):
    from IPython.utils.capture import capture_output

    from npu_jupyter._notebook.state import current_config
    from npu_jupyter._options import snapshot

    calls = []
    real = snapshot.rules.errors
    monkeypatch.setattr(snapshot.rules, "errors", lambda values: calls.append(dict(values)) or real(values))
    config = current_config()
    config.update(precision_mode="allow_mix_precision")
    notifiers = sum(len(v) for by_type in config._trait_notifiers.values() for v in by_type.values())
    calls.clear()
    with capture_output():
        ip.run_cell_magic("npu", "--quiet --precision force_fp16", CELL)
    assert ip.user_ns["out"].shape == (2, 3)
    assert calls == [{"precision_mode": "force_fp16"}]  # the cell's snapshot, checked once
    assert not [name for name in vars(config) if name.startswith("_npu")]
    assert sum(len(v) for by_type in config._trait_notifiers.values() for v in by_type.values()) == notifiers


def test_a_session_leaves_no_marks_on_the_config_it_was_given():
    from npu_jupyter._runtime.backends import session

    config = NpuConfig(precision_mode="force_fp16")
    before = dict(vars(config))
    g = tf.Graph()
    with g.as_default():
        y = tf.constant(1.0) * 2.0
    with session(config, graph=g, backend="emulator") as sess:
        assert sess.run(y) == 2.0
        config.precision_mode = "force_fp32"  # the caller's later edit does not reach the session
        assert sess.config.precision_mode == "force_fp16"
    assert not [name for name in vars(config) if name.startswith("_npu")]
    assert set(vars(config)) == set(before)
