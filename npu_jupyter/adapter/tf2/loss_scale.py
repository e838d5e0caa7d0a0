"""``npu_device.train.optimizer.NpuLossScaleOptimizer``: Keras' loss-scale optimizer, as the adapter runs it.

The adapter subclasses ``tf.keras.mixed_precision.LossScaleOptimizer`` and adds ``last_step_finite``.
With no NPU context, or when the device is in INF/NaN mode (``is_inf_nan_enabled()``, the Ascend 910B's
default and the only mode of a CPU), its ``apply_gradients`` is Keras' own: a step whose gradients hold
inf/NaN is skipped and, when dynamic, the scale halves; after ``dynamic_growth_steps`` finite steps it
doubles; a fixed scale never changes. (In saturation mode the device reads its float-status register
instead, which has no CPU counterpart.) So the emulated class is the same subclass of whatever
``tf.keras`` is here.

Keras 3 (TensorFlow ≥ 2.16) dropped ``dynamic=False``; for it a fixed scale is kept here as Keras 2 keeps
it: gradients are unscaled and applied every step, finite or not, and the scale never moves.
``initial_scale`` / ``dynamic_growth_steps`` left at None take Keras 2's defaults (2**15 and 2000).
The class is built on first use, so importing the emulated surface does not import Keras.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from npu_jupyter._tf_types import Tensor, Variable

_CLASSES: dict[type, type] = {}  # tf.keras's LossScaleOptimizer -> the subclass built on it

KERAS2_INITIAL_SCALE = 2.0**15
KERAS2_GROWTH_STEPS = 2000


def __getattr__(name: str) -> type:
    """``NpuLossScaleOptimizer`` is built from ``tf.keras`` when first asked for."""
    if name == "NpuLossScaleOptimizer":
        return _build_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _keras3(base: type) -> bool:
    """Whether ``base`` is Keras 3's LossScaleOptimizer (it has no ``dynamic`` argument)."""
    return hasattr(base, "scale_loss") and not hasattr(base, "get_scaled_loss")


def _build_class() -> type:
    """The subclass of the LossScaleOptimizer ``tf.keras`` has now (one per Keras, built once)."""
    import tensorflow as tf

    base = tf.keras.mixed_precision.LossScaleOptimizer
    if base in _CLASSES:
        return _CLASSES[base]
    built = _keras3_class(tf, base) if _keras3(base) else _keras2_class(tf, base)
    built.__qualname__ = built.__name__  # as the adapter's class reads in reprs and errors
    built.__module__ = "npu_device.train.optimizer"
    _CLASSES[base] = built
    return built


def _last_step_finite(tf: types.ModuleType) -> Variable:
    """The adapter's ``npu_last_step_finite`` variable (only its saturation-mode path assigns it)."""
    with tf.init_scope():
        flag: Variable = tf.Variable(False, name="npu_last_step_finite", dtype=tf.bool, trainable=False)
    return flag


def _keras2_class(tf: types.ModuleType, base: type) -> type:
    """On TF 2.6's Keras the base is the optimizer itself; tf_keras >= 2.11 dispatches on the inner one.

    There ``tf.keras.mixed_precision.LossScaleOptimizer(opt)`` builds a LossScaleOptimizer for a legacy
    (OptimizerV2) ``opt`` and a LossScaleOptimizerV3 for a new one; the NPU class does the same, and
    ``isinstance(x, NpuLossScaleOptimizer)`` holds for both.
    """
    module = sys.modules[base.__module__]
    v3 = getattr(module, "LossScaleOptimizerV3", None)
    if v3 is None:
        return _keras2_subclass(tf, base)
    legacy, new = _keras2_subclass(tf, module.LossScaleOptimizer), _keras2_subclass(tf, v3)
    optimizer_v2 = module.optimizer_v2.OptimizerV2

    class Dispatch(type):
        def __call__(cls, inner_optimizer: object, *args: Any, **kwargs: Any) -> object:
            target = legacy if isinstance(inner_optimizer, optimizer_v2) else new
            built: object = target(inner_optimizer, *args, **kwargs)  # a Keras optimizer (Keras ships no types)
            return built

        def __instancecheck__(cls, instance: object) -> bool:
            return isinstance(instance, (legacy, new))

        def __subclasscheck__(cls, subclass: type) -> bool:
            return issubclass(subclass, (legacy, new))

    return Dispatch("NpuLossScaleOptimizer", (), {"__doc__": legacy.__doc__})


def _keras2_subclass(tf: types.ModuleType, base: type) -> type:
    class NpuLossScaleOptimizer(base):  # type: ignore[misc]  # built from tf.keras at runtime
        """NPU implemented loss scale optimizer (npu_jupyter's emulation: Keras' own on one device)."""

        _HAS_AGGREGATE_GRAD = True

        def __init__(
            self,
            inner_optimizer: object,
            dynamic: bool = True,
            initial_scale: float | None = None,
            dynamic_growth_steps: int | None = None,
        ) -> None:
            super().__init__(inner_optimizer, dynamic, initial_scale, dynamic_growth_steps)
            self._last_step_finite = _last_step_finite(tf)

        @property
        def last_step_finite(self) -> Variable:
            """False until the device's saturation-mode path assigns it (never on one CPU device)."""
            return self._last_step_finite

    NpuLossScaleOptimizer.__qualname__ = NpuLossScaleOptimizer.__name__
    NpuLossScaleOptimizer.__module__ = "npu_device.train.optimizer"
    return NpuLossScaleOptimizer


def _keras3_class(tf: types.ModuleType, base: type) -> type:
    from keras import ops

    class NpuLossScaleOptimizer(base):  # type: ignore[misc]  # built from tf.keras at runtime
        """NPU implemented loss scale optimizer (npu_jupyter's emulation on Keras 3, fixed scale kept)."""

        def __init__(
            self,
            inner_optimizer: object,
            dynamic: bool = True,
            initial_scale: float | None = None,
            dynamic_growth_steps: int | None = None,
        ) -> None:
            if not dynamic and initial_scale is None:
                raise ValueError('"initial_scale" must be specified if "dynamic" is False')
            scale = KERAS2_INITIAL_SCALE if initial_scale is None else float(initial_scale)
            steps = KERAS2_GROWTH_STEPS if dynamic_growth_steps is None else int(dynamic_growth_steps)
            super().__init__(inner_optimizer, initial_scale=scale, dynamic_growth_steps=steps)
            self.dynamic = bool(dynamic)
            self._last_step_finite = _last_step_finite(tf)

        @property
        def last_step_finite(self) -> Variable:
            """False until the device's saturation-mode path assigns it (never on one CPU device)."""
            return self._last_step_finite

        def check_finite(self, grads: list[Tensor | None]) -> Tensor:
            """A fixed scale applies every step (Keras 2's ``dynamic=False``)."""
            finite: Tensor = super().check_finite(grads) if self.dynamic else ops.convert_to_tensor(True)
            return finite

        def _stateful_handle_finite_grads(
            self, grads: list[Tensor | None], trainable_variables: list[Variable]
        ) -> object:
            """Keras 3's step on finite gradients; a fixed scale unscales and applies them itself."""
            if self.dynamic:
                applied: object = super()._stateful_handle_finite_grads(grads, trainable_variables)
                return applied
            scale = self.dynamic_scale
            unscaled = [g if g is None else ops.divide(g, scale) for g in grads]
            result: object = self.inner_optimizer.apply(unscaled, trainable_variables=trainable_variables)
            return result

    return NpuLossScaleOptimizer
