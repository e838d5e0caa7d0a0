"""An op's failure in an emulated step reads as the user's graph would raise it: its node, its script lines."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.session.emulator import EmulatorSession


@pytest.mark.parametrize("half", [(), ("ConcatV2",)], ids=["copy", "rounded variant"])
def test_a_failing_op_is_named_as_in_the_users_graph_with_the_line_that_made_it(tf, hand, half):
    """ModelZoo DeltaEncoder_ID1273: a batch mismatch in its decoder's tf.concat read "Detected at node
    'npu_emu_run2/D/concat_1'" with no line of the script, the emulator's private copy having none."""
    g = tf.Graph()
    with g.as_default():
        a = tf.compat.v1.placeholder(tf.float32, [None, 2], name="a")
        b = tf.compat.v1.placeholder(tf.float32, [None, 3], name="b")
        joined = tf.concat([a, b], 1, name="joined")  # the line the error must point at
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn(set(half))) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as caught:
            sess.run(joined, {a: np.ones((4, 2), np.float32), b: np.ones((3, 3), np.float32)})
    message = str(caught.value.message)
    assert "npu_emu" not in message
    assert "Detected at node 'joined'" in message or "[[node joined (defined at" in message  # TF >= 2.10 / 2.6
    assert "test_op_errors.py" in message  # the definition site, as plain TensorFlow shows it
    assert caught.value.op is g.get_operation_by_name("joined")
