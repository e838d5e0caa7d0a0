"""The TF2 adapter's ops with a one-device CPU meaning: ``gen_npu_ops`` dropout and FastGelu, ``ops.gelu``.

``gen_npu_ops`` is the adapter's loaded op library. ModelZoo scripts ship their own dropout
(``npu_convert_dropout.py`` / ``npu_ops.py`` next to the script) built on its DropOutGenMask /
DropOutDoMask pair: the first draws a keep mask (probability ``keep_prob``), the second keeps the masked
elements scaled by ``1 / keep_prob``. Here the mask is a uint8 tensor of per-element keep flags (the
device packs bits; scripts only pass the mask from one op to the other) and the random stream is
TensorFlow's, not the device's. FastGelu is ``x * sigmoid(1.702 x)`` (the CANN kernel's formula,
written there as ``x / (1 + exp(-1.702|x|)) * exp(0.851 (x - |x|))``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from npu_jupyter._tf_types import Tensor

FAST_GELU_K = 1.702


def drop_out_gen_mask(shape: object, prob: object, seed: int = 0, seed2: int = 0, name: str | None = None) -> Tensor:
    """A keep mask for a tensor of ``shape``: each element kept with probability ``prob``."""
    import tensorflow as tf

    with tf.name_scope(name or "DropOutGenMask"):
        uniform = tf.random.uniform(tf.reshape(tf.reduce_prod(shape), [1]), seed=(seed2 or seed) or None)
        mask: Tensor = tf.cast(uniform < tf.cast(prob, tf.float32), tf.uint8)
    return mask


def drop_out_do_mask(x: object, mask: object, keep_prob: object, name: str | None = None) -> Tensor:
    """``x`` where the mask keeps it, scaled by ``1 / keep_prob``; zero elsewhere."""
    import tensorflow as tf

    with tf.name_scope(name or "DropOutDoMask"):
        value = tf.convert_to_tensor(x)
        keep = tf.reshape(tf.cast(mask, value.dtype), tf.shape(value))
        kept: Tensor = value * keep / tf.cast(keep_prob, value.dtype)
    return kept


def fast_gelu(x: object, name: str | None = None) -> Tensor:
    """FastGelu: ``x * sigmoid(1.702 x)``."""
    import tensorflow as tf

    with tf.name_scope(name or "FastGelu"):
        value = tf.convert_to_tensor(x)
        out: Tensor = value * tf.sigmoid(tf.cast(FAST_GELU_K, value.dtype) * value)
    return out


def fast_gelu_grad(dy: object, x: object, name: str | None = None) -> Tensor:
    """FastGeluGrad: ``dy`` times the derivative of FastGelu at ``x``."""
    import tensorflow as tf

    with tf.name_scope(name or "FastGeluGrad"):
        value = tf.convert_to_tensor(x)
        k = tf.cast(FAST_GELU_K, value.dtype)
        s = tf.sigmoid(k * value)
        grad: Tensor = dy * (s + k * value * s * (1 - s))
    return grad


def gelu(x: object) -> Tensor:
    """``npu_device.ops.gelu``: exact GELU when eager, FastGelu in a graph (as the adapter)."""
    import tensorflow as tf

    if _keras_tensor(x):  # Keras functional construction: the adapter wraps the op in a layer
        from tensorflow import keras

        layered: Tensor = keras.layers.Lambda(fast_gelu)(x)
        return layered
    if tf.executing_eagerly():
        return _exact_gelu(x)
    return fast_gelu(x)


def _exact_gelu(x: object) -> Tensor:
    """GELU ``0.5 x (1 + erf(x / sqrt 2))``, what TensorFlow's ``nn.gelu`` computes (TF 2 only has it)."""
    import tensorflow as tf

    value = tf.convert_to_tensor(x)
    out: Tensor = 0.5 * value * (1.0 + tf.math.erf(value / tf.cast(2.0**0.5, value.dtype)))
    return out


def _keras_tensor(x: object) -> bool:
    """Whether ``x`` is a symbolic Keras tensor (a functional model being built)."""
    return type(x).__name__ == "KerasTensor"
