"""The emulator's stand-ins for npu_ops.dropout are not estimated as the device's costliest ops."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter._display import text
from npu_jupyter._display.mime import report_payload

CONFIG = {"precision_mode": "allow_mix_precision"}


def _report(dropout):
    """The report of one step of x @ w -> dropout(keep 0.5) -> mean, on the emulator."""
    import tensorflow as tf

    import npu_jupyter

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [64, 256], name="x")
        w = tf.compat.v1.get_variable("w", [256, 256])
        loss = tf.reduce_mean(dropout(tf.matmul(x, w)), name="loss")
        init = tf.compat.v1.global_variables_initializer()
    with npu_jupyter.session(config=CONFIG, graph=g) as sess:
        sess.run(init)
        sess.run(loss, {x: np.ones((64, 256), np.float32)})
        return sess.last_report


@pytest.fixture(scope="module")
def emulated():
    from npu_jupyter.adapter.tf1 import npu_ops

    return _report(lambda h: npu_ops.dropout(h, keep_prob=0.5))


def test_the_emulated_dropouts_ops_are_left_out_of_the_costliest_ops_and_said_to_be_stand_ins(emulated):
    """The stand-in RandomUniform (AI CPU, 30 µs) led 'Estimated costliest ops' as if the device ran it."""
    estimated = emulated.estimate.est_us
    assert "MatMul" in estimated and not [name for name in estimated if name.startswith("dropout/")]
    shown = text.render(report_payload(emulated))
    costliest = next(line for line in shown.splitlines() if line.startswith("Estimated costliest ops"))
    assert "dropout/" not in costliest
    (note,) = [n for n in emulated.notes if "stand-ins" in n]
    assert note.startswith("8 ops are the emulator's stand-ins for npu_ops.dropout (dropout/")
    assert "dropout/random_uniform/RandomUniform, " in note and "Const" not in note  # the costly ones named
    assert "the device runs npu_ops.dropout's DropOutGenMask/DropOutDoMask there" in note
    assert emulated.estimate.block.step_ms is not None  # the step estimate stays, counting them (the note says)


def test_a_users_own_tf_nn_dropout_is_estimated_and_not_called_a_stand_in():
    """tf.nn.dropout in the user's graph is what the device runs too: no note, estimated as usual."""
    import tensorflow as tf

    report = _report(lambda h: tf.nn.dropout(h, rate=0.5))
    assert any(name.endswith("RandomUniform") for name in report.estimate.est_us)
    assert not [n for n in report.notes if "stand-ins" in n]
