"""Loss scaling as the adapter does it on one device: NPULossScaleOptimizer and its two managers.

Semantics follow the adapter's ``npu_loss_scale_optimizer`` / ``npu_loss_scale_manager`` (ADAPTER
sources, TF Adapter 1.x) in its INF/NaN mode, the mode that does not read the device's float-status
register: the loss is multiplied by the loss scale, gradients are divided by it, the update is skipped
when any gradient is non-finite, and the manager then updates the scale:

* ``FixedLossScaleManager``: the scale never changes.
* ``ExponentialUpdateLossScaleManager``: after ``incr_every_n_steps`` finite steps in a row the scale is
  multiplied by ``incr_ratio`` (unless that would pass 3.4e38); after ``decr_every_n_nan_or_inf``
  non-finite steps it becomes ``max(1, scale * decr_ratio)``. Both counters reset when the scale
  changes; a finite step resets the bad-step counter, a non-finite one the good-step counter.

Graph mode (``tf.compat.v1``) only, as in the adapter. TensorFlow is imported when a class is used.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from typing import Protocol  # novermin - 3.8+; only the type checker reads this block

    from npu_jupyter._tf_types import Operation, Optimizer, Tensor, Variable

    class LossScaleManager(Protocol):
        """What NPULossScaleOptimizer asks of its manager (the two below, or a script's own)."""

        def get_loss_scale(self) -> Tensor | Variable:
            """The scale the loss is multiplied by."""
            ...

        def update_loss_scale(self, finite_grads: Tensor) -> Operation:
            """The op that updates the scale after a step whose gradients were (not) all finite."""
            ...


_MAX_FLOAT32_SCALE = 3.4e38


def _tf() -> types.ModuleType:
    import tensorflow as tf

    module: types.ModuleType = tf
    return module


class FixedLossScaleManager:
    """A constant loss scale (``loss_scale`` >= 1); ``enable_overflow_check`` keeps the skip-on-overflow."""

    def __init__(self, loss_scale: float, enable_overflow_check: bool = True) -> None:
        if loss_scale < 1:
            raise ValueError(f"FixedLossScaleManager: loss_scale must be at least 1, got {loss_scale!r}")
        tf = _tf()
        self._loss_scale: Tensor = tf.convert_to_tensor(float(loss_scale), dtype=tf.float32, name="loss_scale")
        self._enable_overflow_check = bool(enable_overflow_check)

    def get_loss_scale(self) -> Tensor:
        """The scale tensor the loss is multiplied by."""
        return self._loss_scale

    def update_loss_scale(self, finite_grads: Tensor) -> Operation:
        """Nothing to update: a fixed scale."""
        del finite_grads
        op: Operation = _tf().no_op(name="fixed_loss_scale_update")
        return op

    def get_enable_overflow_check(self) -> bool:
        """Whether the optimizer skips updates whose gradients are not finite."""
        return self._enable_overflow_check


class ExponentialUpdateLossScaleManager:
    """Dynamic loss scale kept in non-trainable variables ``loss_scale``, ``good_steps``, ``bad_steps``.

    They are made as contrib's manager (the adapter's base) makes them, of TensorFlow's default kind:
    under TF 1.15 behaviour ref variables, which the adapter's device keeps and which scripts fetch as
    ``get_tensor_by_name("loss_scale:0")``; a resource variable there put its reads on the host.
    """

    def __init__(
        self,
        init_loss_scale: float,
        incr_every_n_steps: int,
        decr_every_n_nan_or_inf: int = 2,
        incr_ratio: float = 2,
        decr_ratio: float = 0.8,
    ) -> None:
        for label, value in (
            ("incr_every_n_steps", incr_every_n_steps),
            ("decr_every_n_nan_or_inf", decr_every_n_nan_or_inf),
        ):
            if int(value) < 1:
                raise ValueError(f"ExponentialUpdateLossScaleManager: {label} must be at least 1, got {value!r}")
        if init_loss_scale <= 0 or incr_ratio <= 0 or decr_ratio <= 0:
            raise ValueError(
                "ExponentialUpdateLossScaleManager: init_loss_scale, incr_ratio and decr_ratio "
                f"must be positive, got {init_loss_scale!r}, {incr_ratio!r}, {decr_ratio!r}"
            )
        tf = _tf()
        self._incr_every_n_steps = int(incr_every_n_steps)
        self._decr_every_n_nan_or_inf = int(decr_every_n_nan_or_inf)
        self._incr_ratio = float(incr_ratio)
        self._decr_ratio = float(decr_ratio)
        v1 = tf.compat.v1
        self._loss_scale: Variable = v1.Variable(
            float(init_loss_scale), dtype=tf.float32, trainable=False, name="loss_scale"
        )
        self._num_good_steps: Variable = v1.Variable(0, dtype=tf.int32, trainable=False, name="good_steps")
        self._num_bad_steps: Variable = v1.Variable(0, dtype=tf.int32, trainable=False, name="bad_steps")

    def get_loss_scale(self) -> Variable:
        """The current scale (a variable: it changes as the run goes)."""
        return self._loss_scale

    def _reset_stats(self) -> Operation:
        tf = _tf()
        op: Operation = tf.group(
            tf.compat.v1.assign(self._num_good_steps, 0), tf.compat.v1.assign(self._num_bad_steps, 0)
        )
        return op

    def update_loss_scale(self, finite_grads: Tensor) -> Operation:
        """The op that moves the scale and the counters after one step (``finite_grads``: bool tensor)."""
        tf = _tf()
        v1 = tf.compat.v1

        def finite() -> object:  # tf.cond branches: their ops go to TensorFlow only
            def increase() -> object:
                room = tf.less(self._loss_scale, _MAX_FLOAT32_SCALE / self._incr_ratio)
                new = tf.where(room, self._loss_scale * self._incr_ratio, self._loss_scale)
                return tf.group(v1.assign(self._loss_scale, new), self._reset_stats())

            def count() -> object:
                return tf.group(v1.assign_add(self._num_good_steps, 1), v1.assign(self._num_bad_steps, 0))

            return v1.cond(self._num_good_steps + 1 >= self._incr_every_n_steps, increase, count)

        def not_finite() -> object:
            def decrease() -> object:
                new = tf.maximum(1.0, self._loss_scale * self._decr_ratio)
                return tf.group(v1.assign(self._loss_scale, new), self._reset_stats())

            def count() -> object:
                return tf.group(v1.assign_add(self._num_bad_steps, 1), v1.assign(self._num_good_steps, 0))

            return v1.cond(self._num_bad_steps + 1 >= self._decr_every_n_nan_or_inf, decrease, count)

        update: Operation = v1.cond(finite_grads, finite, not_finite)
        return update


def _all_finite(grads: list[Tensor]) -> Tensor:
    """One bool: every element of every gradient is finite (IndexedSlices: their values).

    This is the adapter's check in INF/NaN mode (contrib's LossScaleOptimizer: IsFinite per gradient).
    In saturation mode, the Ascend 910's only mode, the adapter reads the device's float-status register
    instead (``npu_get_float_status_v2``), which a CPU has not. The ops are stamped as the emulator's
    stand-ins for that check (:mod:`npu_jupyter.cost.stand_ins`), so a report on such a SoC does not
    estimate them as work the device does.
    """
    tf = _tf()
    if not grads:
        always: Tensor = tf.constant(True)
        return always
    from npu_jupyter.cost.stand_ins import OVERFLOW_CHECK, stamped

    with stamped(OVERFLOW_CHECK):
        checks = [tf.reduce_all(tf.math.is_finite(getattr(g, "values", g))) for g in grads]
        finite: Tensor = tf.reduce_all(tf.stack(checks), name="overflow_status_reduce_all")
    return finite


def _down_scale(grad: Tensor | None, loss_scale: Tensor | Variable) -> Tensor | None:
    tf = _tf()
    if grad is None:
        return None
    inverse = tf.math.reciprocal(tf.cast(loss_scale, grad.dtype))
    if isinstance(grad, tf.IndexedSlices):
        sliced: Tensor = tf.IndexedSlices(grad.values * inverse, grad.indices, grad.dense_shape)
        return sliced
    scaled: Tensor = grad * inverse
    return scaled


def _optimizer_base() -> type:
    base: type = _tf().compat.v1.train.Optimizer
    return base


class NPULossScaleOptimizer:
    """Wraps a ``tf.compat.v1.train.Optimizer``: scaled loss, unscaled gradients, skipped non-finite steps.

    A ``tf.compat.v1.train.Optimizer`` subclass at run time (built on first use, so importing this module
    does not import TensorFlow). ``is_distributed`` has nothing to reduce on one device.
    """

    def __new__(cls, opt: Optimizer, loss_scale_manager: LossScaleManager, is_distributed: bool = False) -> Any:  # noqa: ANN401 - an instance of the Optimizer subclass built at run time, not of this class
        """The real Optimizer subclass, built on first use so that import stays free of TensorFlow."""
        return _loss_scale_class()(opt, loss_scale_manager, is_distributed)


_CLASS_CACHE: dict[str, type] = {}


def _loss_scale_class() -> type:
    """The Optimizer subclass, made once TensorFlow is imported."""
    if "class" in _CLASS_CACHE:
        return _CLASS_CACHE["class"]
    base = _optimizer_base()

    class NPULossScaleOptimizerImpl(base):  # type: ignore[misc, valid-type]  # base: TF's Optimizer, known at run time
        __doc__ = NPULossScaleOptimizer.__doc__

        def __init__(self, opt: Optimizer, loss_scale_manager: LossScaleManager, is_distributed: bool = False) -> None:
            super().__init__(use_locking=False, name=f"NPULossScaleOptimizer{type(opt).__name__}")
            self._opt = opt
            self._loss_scale_manager = loss_scale_manager
            self._is_distributed = bool(is_distributed)

        def compute_gradients(
            self,
            loss: Tensor,
            var_list: object = None,
            gate_gradients: int = 1,
            aggregation_method: object = None,
            colocate_gradients_with_ops: bool = False,
            grad_loss: object = None,
        ) -> list[tuple[Tensor | None, Variable]]:
            """Gradients of ``loss * scale``, divided by the scale again."""
            tf = _tf()
            loss_scale = self._loss_scale_manager.get_loss_scale()
            scaled = loss * tf.cast(loss_scale, loss.dtype)
            pairs = self._opt.compute_gradients(
                scaled,
                var_list=var_list,
                gate_gradients=gate_gradients,
                aggregation_method=aggregation_method,
                colocate_gradients_with_ops=colocate_gradients_with_ops,
                grad_loss=grad_loss,
            )
            return [(_down_scale(g, loss_scale), v) for g, v in pairs]

        def apply_gradients(
            self,
            grads_and_vars: Iterable[tuple[Tensor | None, Variable]],
            global_step: object = None,
            name: str | None = None,
        ) -> Operation:
            """Apply only when every gradient is finite; always let the manager update the scale."""
            tf = _tf()
            pairs = list(grads_and_vars)
            grads = [g for g, _ in pairs if g is not None]
            finite = _all_finite(grads) if self._overflow_check() else tf.constant(True, dtype=tf.bool)

            def apply() -> object:  # a tf.cond branch
                return tf.group(self._opt.apply_gradients(pairs, global_step, name))

            update = tf.compat.v1.cond(finite, apply, tf.no_op)
            op: Operation = tf.group(update, self._loss_scale_manager.update_loss_scale(finite))
            return op

        def _overflow_check(self) -> bool:
            check = getattr(self._loss_scale_manager, "get_enable_overflow_check", None)
            return bool(check()) if callable(check) else True

        def get_loss_scale(self) -> Tensor | Variable:
            return self._loss_scale_manager.get_loss_scale()

        def variables(self) -> list[Variable]:
            """The wrapped optimizer's variables, as the adapter's optimizer answers.

            Its base (contrib's LossScaleOptimizer) never runs ``Optimizer.__init__``, so TensorFlow's
            ``variables()`` finds the slots through ``__getattr__``: the wrapped optimizer's. Keras 2
            initializes a TF optimizer's ``variables()`` before fit; an empty list left Adam's slots
            uninitialized.
            """
            wrapped: list[Variable] = self._opt.variables()
            return wrapped

        def __getattr__(self, attr: str) -> object:
            if attr.startswith("__") or attr == "_opt":
                raise AttributeError(attr)
            return getattr(self._opt, attr)

    NPULossScaleOptimizerImpl.__name__ = NPULossScaleOptimizerImpl.__qualname__ = "NPULossScaleOptimizer"
    _CLASS_CACHE["class"] = NPULossScaleOptimizerImpl
    return NPULossScaleOptimizerImpl
