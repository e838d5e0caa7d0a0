"""``NPUDistributedOptimizer`` and the broadcast hook on one device: the wrapped optimizer, unchanged.

On the adapter the distributed optimizer all-reduces gradients across ranks, and returns them as they
are when the rank size is 1 (no ``RANK_SIZE`` or ``RANK_SIZE=1``); the broadcast hook copies rank 0's
variables to the others. One emulated device is rank 0 of 1, so both are identities here.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from npu_jupyter._tf_types import Operation, Optimizer, Tensor, Variable

_T = TypeVar("_T")


def _rank_size() -> int:
    """RANK_SIZE as the adapter reads it (default 1); the emulator is one device, so > 1 is an error."""
    text = os.environ.get("RANK_SIZE", "1")
    return int(text) if text.isdigit() else 1


def NPUDistributedOptimizer(  # noqa: N802 - the adapter's class name
    optimizer: Optimizer, is_weight_update_sharding: bool = False, name: str | None = None
) -> Optimizer:
    """The adapter's distributed optimizer for rank size 1: computes and applies like ``optimizer``."""
    if _rank_size() > 1:
        raise RuntimeError(
            f"NPUDistributedOptimizer: RANK_SIZE={_rank_size()} but the emulated adapter is one "
            "device; unset RANK_SIZE (or set it to 1) to emulate one rank"
        )
    wrapped: Optimizer = _distributed_class()(optimizer, is_weight_update_sharding, name)
    return wrapped


def npu_distributed_optimizer_wrapper(optimizer: _T) -> _T:
    """On one device the adapter's wrapper returns the optimizer as it is."""
    return optimizer


def npu_tf_optimizer(opt: Optimizer) -> Optimizer:
    """``npu_init.npu_tf_optimizer``: ``NPUDistributedOptimizer(opt)``."""
    return NPUDistributedOptimizer(opt)


_CACHE: dict[str, type] = {}


def _distributed_class() -> type:
    if "optimizer" in _CACHE:
        return _CACHE["optimizer"]
    import tensorflow as tf

    class Distributed(tf.compat.v1.train.Optimizer):
        def __init__(
            self, optimizer: Optimizer, is_weight_update_sharding: bool = False, name: str | None = None
        ) -> None:
            super().__init__(name=name or f"Distributed{type(optimizer).__name__}", use_locking=False)
            self._optimizer = optimizer
            self._is_weight_update_sharding = is_weight_update_sharding

        def compute_gradients(self, *args: Any, **kwargs: Any) -> list[tuple[Tensor | None, Variable]]:
            return self._optimizer.compute_gradients(*args, **kwargs)

        def apply_gradients(self, *args: Any, **kwargs: Any) -> Operation:
            return self._optimizer.apply_gradients(*args, **kwargs)

        def get_slot(self, *args: Any, **kwargs: Any) -> Variable | None:
            return self._optimizer.get_slot(*args, **kwargs)

        def get_slot_names(self, *args: Any, **kwargs: Any) -> list[str]:
            return self._optimizer.get_slot_names(*args, **kwargs)

        def variables(self, *args: Any, **kwargs: Any) -> list[Variable]:
            return self._optimizer.variables(*args, **kwargs)

    Distributed.__name__ = Distributed.__qualname__ = "NPUDistributedOptimizer"
    _CACHE["optimizer"] = Distributed
    return Distributed


def _hook_class() -> type:
    if "hook" in _CACHE:
        return _CACHE["hook"]
    import tensorflow as tf

    class Broadcast(tf.compat.v1.train.SessionRunHook):
        """Rank 0 of 1 has nothing to broadcast."""

        def __init__(self, root_rank: int | None = None, index: int | None = None) -> None:
            self._root_rank = root_rank
            self._index = index

    Broadcast.__name__ = Broadcast.__qualname__ = "NPUBroadcastGlobalVariablesHook"
    _CACHE["hook"] = Broadcast
    return Broadcast


def NpuEmptyHook() -> object:  # noqa: N802 - the adapter's class name; a SessionRunHook, handed to TensorFlow
    """``npu_init.NpuEmptyHook``: a SessionRunHook that does nothing, as on the adapter."""
    if "empty" not in _CACHE:
        import tensorflow as tf

        class Empty(tf.compat.v1.train.SessionRunHook):
            """Does nothing."""

        Empty.__name__ = Empty.__qualname__ = "NpuEmptyHook"
        _CACHE["empty"] = Empty
    hook: object = _CACHE["empty"]()
    return hook


def NPUBroadcastGlobalVariablesHook(root_rank: int | None = None, index: int | None = None) -> object:  # noqa: N802
    """A SessionRunHook that does nothing: one device has no other ranks."""
    hook: object = _hook_class()(root_rank, index)
    return hook


def npu_hooks_append(hooks_list: object = ()) -> list[object]:
    """As the adapter: a list (a new one if ``hooks_list`` is not a list) with the broadcast hook added."""
    hooks: list[object] = hooks_list if isinstance(hooks_list, list) else []
    hooks.append(NPUBroadcastGlobalVariablesHook(0, int(os.getenv("RANK_ID", "0"))))
    return hooks
