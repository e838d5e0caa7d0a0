"""Small real TensorFlow graphs shared by the planner tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def conv_net():
    """conv -> relu -> reshape -> matmul -> bias -> softmax -> reduce_sum, TF1 graph, float32."""
    import tensorflow as tf

    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [2, 8, 8, 3], name="x")
        f = tf.constant(0.1, tf.float32, [3, 3, 3, 4], name="filter")
        conv = tf.nn.conv2d(x, f, strides=1, padding="SAME", name="conv")
        relu = tf.nn.relu(conv, name="relu")
        flat = tf.reshape(relu, [2, 256], name="flat")
        w = tf.constant(0.01, tf.float32, [256, 10], name="w")
        mm = tf.matmul(flat, w, name="mm")
        logits = tf.nn.bias_add(mm, tf.zeros([10]), name="logits")
        probs = tf.nn.softmax(logits, name="probs")
        tf.reduce_sum(probs, name="total")
    return g
