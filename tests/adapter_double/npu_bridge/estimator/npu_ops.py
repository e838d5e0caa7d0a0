"""Double of ``npu_bridge.estimator.npu_ops``: ``dropout`` with the real signature, on plain TF."""

from __future__ import annotations

from typing import Any


def dropout(x: Any, keep_prob: Any, noise_shape: Any = None, seed: Any = None, name: Any = None) -> Any:
    import tensorflow as tf

    return tf.compat.v1.nn.dropout(x, keep_prob=keep_prob, noise_shape=noise_shape, seed=seed, name=name)


def initialize_system(name: Any = None) -> Any:
    import tensorflow as tf

    return tf.no_op(name=name or "NPUInit")


def shutdown_system(name: Any = None) -> Any:
    import tensorflow as tf

    return tf.no_op(name=name or "NPUShutdown")
