"""The emulator session works with the module layout of TF 2.6.5, the Ascend adapter's TF 2 version."""

from __future__ import annotations

import sys

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.session.emulator import EmulatorSession


def test_as_default_works_where_tensorflow_has_no_framework_stack_module(tf, monkeypatch):
    """TF 2.6.5 keeps ``default_session`` in ``framework.ops``; ``framework.stack`` came later."""
    from tensorflow.python import framework
    from tensorflow.python.framework import ops

    try:
        from tensorflow.python.framework import stack
    except ImportError:  # a real old TensorFlow (the legacy CI leg): nothing to simulate
        stack = None
    if stack is not None:  # TF >= 2.16: lay the modules out the way TF 2.6.5 has them
        monkeypatch.setitem(sys.modules, "tensorflow.python.framework.stack", None)
        monkeypatch.delattr(framework, "stack")
        monkeypatch.setattr(ops, "default_session", stack.default_session, raising=False)
    graph = tf.Graph()
    with graph.as_default():
        tf.constant(1.0, name="one")
    sess = EmulatorSession(NpuConfig(), graph)
    try:
        with sess.as_default():
            assert tf.compat.v1.get_default_session() is sess
    finally:
        sess.close()
