"""``import npu_bridge.estimator.npu.npu_convert_dropout``: Keras 2's Dropout layers call the adapter's dropout.

The adapter's module replaces ``Dropout.call`` of TF 1.15's Keras (``tensorflow.python.keras``) when it
is imported: without a ``noise_shape`` the layer calls ``npu_ops.dropout(keep_prob=1 - rate)`` (the
fused DropOutGenMask/DropOutDoMask pair on the device), with one it keeps ``tf.nn.dropout``; either
way only when ``training`` (Keras' learning phase when not given), else the identity. The emulation
installs the same ``call`` on every Keras 2 ``Dropout`` class this TensorFlow has
(``tensorflow.python.keras``, ``tf_keras``, a Keras 2 ``keras``), so it calls the emulated
``npu_ops.dropout`` (same distribution and checks as the adapter's, TensorFlow's random stream).
Keras 3 layers are not TF1 graph code and were never swapped by the adapter either. :func:`restore`
puts the original ``call`` back when the emulation is switched off.
"""

from __future__ import annotations

import importlib
import types
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import Protocol  # novermin - 3.8+; only the type checker reads this block

    from npu_jupyter._tf_types import Tensor

    class _Dropout(Protocol):
        """What the swapped ``call`` reads of a Keras 2 ``Dropout`` layer (Keras ships no types)."""

        def _get_noise_shape(self, inputs: object) -> object: ...
        @property
        def rate(self) -> float: ...
        @property
        def seed(self) -> int | None: ...


# (Dropout class, its original call, the Keras backend module whose learning phase it reads)
_swapped: list[tuple[type[Any], object, types.ModuleType]] = []  # Keras classes: untyped

# Keras 2 packages: (module with the Dropout class, its backend module)
_KERAS2 = (
    ("tensorflow.python.keras.layers.core", "tensorflow.python.keras.backend"),
    ("tf_keras.layers", "tf_keras.backend"),
    ("keras.layers", "keras.backend"),
)


def dropout_call(self: _Dropout, inputs: object, training: object = None) -> Tensor:
    """The adapter's ``Dropout.call``: ``npu_ops.dropout`` without a noise shape, ``tf.nn.dropout`` with one."""
    import tensorflow as tf
    from tensorflow.python.framework import smart_cond

    from npu_jupyter.adapter.tf1 import npu_ops

    if training is None:
        training = _backend_of(type(self)).learning_phase()
    noise_shape = self._get_noise_shape(inputs)
    # The adapter tests ``if noise_shape:``, which a graph-mode tensor refuses; its intent is "given"
    if noise_shape is not None:

        def dropped() -> Tensor:
            out: Tensor = tf.nn.dropout(inputs, noise_shape=noise_shape, seed=self.seed, rate=self.rate)
            return out
    else:

        def dropped() -> Tensor:
            return npu_ops.dropout(inputs, noise_shape=noise_shape, seed=self.seed, keep_prob=1.0 - self.rate)

    out: Tensor = smart_cond.smart_cond(training, dropped, lambda: tf.identity(inputs))
    return out


def _backend_of(cls: type) -> types.ModuleType:
    for swapped, _, backend in _swapped:
        if issubclass(cls, swapped):
            return backend
    import tensorflow as tf

    default: types.ModuleType = tf.compat.v1.keras.backend
    return default


def keras2_dropout_classes() -> list[tuple[type[Any], types.ModuleType]]:
    """(Dropout class, backend module) of every Keras 2 importable here (Keras 3 is left alone)."""
    found: list[tuple[type[Any], types.ModuleType]] = []
    for layers_name, backend_name in _KERAS2:
        try:
            layers = importlib.import_module(layers_name)
            backend = importlib.import_module(backend_name)
        except Exception:  # noqa: BLE001, S112 - a Keras that is absent or fails to import has nothing to swap
            continue
        cls = getattr(layers, "Dropout", None)
        version = str(getattr(importlib.import_module(layers_name.split(".")[0]), "__version__", "2"))
        if layers_name.startswith("keras.") and not version.startswith("2."):
            continue
        if cls is not None and not any(cls is seen for seen, _ in found):
            found.append((cls, backend))
    return found


def install() -> None:
    """Swap ``Dropout.call`` as the adapter's module does on import (idempotent); warn when there is no Keras 2."""
    if _swapped:
        return
    classes = keras2_dropout_classes()
    for cls, backend in classes:
        _swapped.append((cls, cls.__dict__.get("call"), backend))  # None: inherited, deleted again on restore
        cls.call = dropout_call
    if not classes:
        warnings.warn(
            "npu_convert_dropout (emulated): this TensorFlow has no Keras 2 Dropout layer (tensorflow.python.keras, "
            "tf_keras or Keras 2) to swap; Keras 3 layers keep their own dropout, as the adapter leaves them. "
            "pip install tf_keras to use Keras 2 layers.",
            stacklevel=2,
        )


def restore() -> None:
    """Put every swapped ``Dropout.call`` back (idempotent)."""
    while _swapped:
        cls, original, _ = _swapped.pop()
        if original is None:
            del cls.call
        else:
            cls.call = original


def is_swapped() -> bool:
    """Whether Keras 2's Dropout layers call the emulated adapter dropout now."""
    return bool(_swapped)
