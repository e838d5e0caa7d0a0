"""Small zoo entries for the zoo's own tests (the contract: ``fn(npu, steps) -> loss``)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np


def _regression(scale: float, rate: float = 1e-3) -> tuple[Any, Any, Any, Any]:
    """A linear regression trained by gradient descent; ``scale`` blows the activations up."""
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(1)
        x = v1.placeholder(tf.float32, [8, 16], name="x")
        w = v1.get_variable("w", initializer=tf.constant(np.linspace(-1, 1, 64, dtype=np.float32).reshape(16, 4)))
        logits = tf.matmul(x * scale, w, name="logits")
        loss = tf.reduce_mean(tf.square(logits), name="loss")
        train = v1.train.GradientDescentOptimizer(rate).minimize(loss, name="train")
        init = v1.global_variables_initializer()
    return graph, init, train, loss


FEED = np.linspace(0, 1, 8 * 16, dtype=np.float32).reshape(8, 16) + 1e-3


def tiny(npu: Any, steps: int) -> float:
    """A finite regression: precision lowered under float16 modes, loss finite."""
    graph, init, train, loss = _regression(1.0)
    with npu.session(graph) as sess:
        sess.run(init)
        for _ in range(steps):
            _, value = sess.run([train, loss], {"x:0": FEED})
    return float(value)


def conv(npu: Any, steps: int) -> float:
    """A Conv2D trained by gradient descent: float32 filter gradients the Ascend 910 refuses to compile."""
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [2, 8, 8, 3], name="images")
        k = v1.get_variable("k", initializer=tf.constant(np.full((3, 3, 3, 4), 0.1, np.float32)))
        loss = tf.reduce_mean(tf.nn.conv2d(x, k, strides=1, padding="SAME"), name="loss")
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        init = v1.global_variables_initializer()
    with npu.session(graph) as sess:
        sess.run(init)
        for _ in range(steps):
            _, value = sess.run([train, loss], {"images:0": np.ones((2, 8, 8, 3), np.float32)})
    return float(value)


def overflow(npu: Any, steps: int) -> float:
    """Squares of ~1e5: beyond float16's 65504, so a float16 mode names the first op that went inf."""
    graph, init, train, loss = _regression(300.0, rate=1e-12)
    with npu.session(graph, {"precision_mode": "force_fp32"}) as sess:  # the script's own config
        sess.run(init)
        for _ in range(steps):
            _, value = sess.run([train, loss], {"x:0": FEED})
    return float(value)


def busy_side_runs(npu: Any, steps: int) -> float:
    """Between training steps a small side graph runs more often (as a queue runner's enqueue does)."""
    import tensorflow as tf

    graph, init, train, loss = _regression(1.0)
    with graph.as_default():
        ticks = tf.compat.v1.get_variable("ticks", initializer=0.0)
        tick = ticks.assign_add(1.0)
    with npu.session(graph) as sess:
        sess.run(tf.compat.v1.variables_initializer([ticks]))
        sess.run(init)
        for _ in range(steps):
            for _ in range(4):
                sess.run(tick)
            _, value = sess.run([train, loss], {"x:0": FEED})
    return float(value)


def raises(npu: Any, steps: int) -> float:
    raise RuntimeError("the script failed <b>here</b>")


def sleeps(npu: Any, steps: int) -> float:
    time.sleep(600)
    return 0.0


def no_session(npu: Any, steps: int) -> float:
    return 0.0


def tf2_loop(npu: Any, steps: int) -> float:
    """A TF2 training loop (tf.function) emulated through npu.functions()."""
    import tensorflow as tf

    w = tf.Variable(np.linspace(-1, 1, 64, dtype=np.float32).reshape(16, 4))
    x = tf.constant(FEED)

    @tf.function
    def step() -> Any:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
        w.assign_sub(1e-3 * tape.gradient(loss, w))
        return loss

    with npu.functions():
        for _ in range(steps):
            value = step()
    return float(value)
