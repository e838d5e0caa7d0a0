"""A run that only initialised a dataset iterator is one line; a real step keeps its full report."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter._display.brief import brief_line
from npu_jupyter._display.mime import MIME_TYPE, mimebundle

CONFIG = {"precision_mode": "allow_mix_precision"}


@pytest.fixture(scope="module")
def runs():
    """(iterator initialisation, step fetched with the initializer, plain step) reports of one graph."""
    import tensorflow as tf

    import npu_jupyter

    g = tf.Graph()
    with g.as_default():
        data = tf.compat.v1.data.Dataset.from_tensor_slices(np.ones((8, 3), np.float32)).batch(4)
        iterator = tf.compat.v1.data.make_initializable_iterator(data)
        w = tf.compat.v1.get_variable("w", (3, 1))
        loss = tf.reduce_sum(tf.matmul(iterator.get_next(), w), name="loss")
        init = tf.compat.v1.global_variables_initializer()
    with npu_jupyter.session(config=CONFIG, graph=g) as sess:
        sess.run(init)
        sess.run(iterator.initializer)
        alone = sess.last_report
        sess.run([iterator.initializer, loss])
        together = sess.last_report
        sess.run(loss)
        step = sess.last_report
    return alone, together, step


def test_an_iterator_initializer_run_reads_as_one_line_naming_what_ran(runs):
    """ModelZoo-style input: sess.run(iterator.initializer) read "NPU step time 0.000 ms" and 7 host-op rows."""
    alone, _, _ = runs
    line = str(alone)
    assert line.startswith("Run of MakeIterator: dataset iterator initialisation only (")
    assert "nothing runs on the NPU" in line and "\n" not in line and "0.000 ms" not in line
    bundle = mimebundle(alone)
    assert MIME_TYPE not in bundle and bundle["text/plain"] == line


def test_a_step_fetched_with_the_initializer_and_a_plain_step_keep_their_full_report(runs):
    _, together, step = runs
    for report in (together, step):
        assert brief_line(report) is None
        assert MIME_TYPE in mimebundle(report)
        assert "\n" in str(report)


def test_an_iterator_run_with_a_warning_keeps_its_full_report(runs):
    """A one-liner must not hide a claim: a warning brings the full report back."""
    import dataclasses

    alone, _, _ = runs
    warned = dataclasses.replace(alone, warnings=["something to read"])
    assert brief_line(warned) is None
    assert "warning: something to read" in str(warned)
