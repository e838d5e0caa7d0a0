"""The adapter's ``npu_ops`` names that have a one-device meaning, on plain TensorFlow ops.

``dropout`` keeps the adapter's signature and checks (``keep_prob`` in (0, 1], floating ``x``, no eager
mode, ``keep_prob == 1.0`` returns ``x`` itself); the adapter's fused DropOutGenMask/DropOutDoMask pair
becomes TensorFlow's own dropout (same distribution: keep with probability ``keep_prob``, scale kept
values by ``1 / keep_prob``; not the same random stream as the device). Its ops carry
``cost.stand_ins.STAND_IN_ATTR``, so reports do not estimate them as the device's.
``initialize_system`` / ``shutdown_system`` open and close the device; with no device they are no-ops.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from npu_jupyter._tf_types import Operation, Tensor


def dropout(
    x: object,
    keep_prob: Any,  # noqa: ANN401 - a number, NumPy scalar or scalar tensor: TensorFlow's arithmetic takes each
    noise_shape: object = None,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """``npu_ops.dropout``: keep each element with probability ``keep_prob``, scaled by ``1/keep_prob``."""
    import tensorflow as tf

    if tf.executing_eagerly():
        raise RuntimeError(
            "npu_ops.dropout() is not compatible with eager execution (as in the adapter): "
            "build the graph in tf.compat.v1 graph mode"
        )
    tensor: Tensor = tf.convert_to_tensor(x, name="x")
    if not tensor.dtype.is_floating:
        raise ValueError(f"npu_ops.dropout: x must be a floating point tensor, got a {tensor.dtype.name} tensor")
    if isinstance(keep_prob, numbers.Real) and not 0 < keep_prob <= 1.0:  # type: ignore[operator]  # typeshed's Real has no <; every Real compares
        raise ValueError(f"npu_ops.dropout: keep_prob must be in (0, 1], got {keep_prob!r}")
    if isinstance(keep_prob, float) and keep_prob == 1.0:
        return tensor
    from npu_jupyter.cost.stand_ins import DROPOUT, stamped

    with stamped(DROPOUT):  # reports: not the device's ops
        dropped: Tensor = tf.nn.dropout(tensor, rate=1 - keep_prob, noise_shape=noise_shape, seed=seed, name=name)
    return dropped


def initialize_system(name: str | None = None) -> Operation:
    """Opens the device on the adapter; a no-op here (there is no device)."""
    import tensorflow as tf

    op: Operation = tf.no_op(name=name or "NPUInit")
    return op


def shutdown_system(name: str | None = None) -> Operation:
    """Closes the device on the adapter; a no-op here."""
    import tensorflow as tf

    op: Operation = tf.no_op(name=name or "NPUShutdown")
    return op
