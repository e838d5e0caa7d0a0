"""%%npu swaps sessions whichever TF namespace the cell takes ``Session`` from."""

from __future__ import annotations

import pytest
from IPython.utils.capture import capture_output

tf = pytest.importorskip("tensorflow")


def test_an_npu_cell_swaps_sessions_made_through_import_tensorflow_compat_v1(ip):
    cell = """
import numpy as np
import tensorflow.compat.v1 as tf1
g = tf1.Graph()
with g.as_default():
    x = tf1.placeholder(tf1.float32, [2], name="x")
    y = tf1.multiply(x, 2.0, name="y")
with tf1.Session(graph=g) as sess:
    kind = type(sess).__name__
    sess.run(y, {x: np.ones(2, np.float32)})
"""
    with capture_output():
        ip.run_cell_magic("npu", "", cell)
    assert ip.user_ns["kind"] == "EmulatorSession"
